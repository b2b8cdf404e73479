// Package render turns regghost's results into the text a person reads:
// one file per command's results.
//
// Each command's results become an Output: the whole document (for json,
// yaml and templates), its rows (for -o name and custom-columns) and the
// human form (table and wide), which this package writes with
// pkg/table doing the layout. Which form is printed is the printer's
// choice, in cmd; what each form says is decided here.
package render
