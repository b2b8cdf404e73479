package render

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/regghost/regghost/pkg/plural"

	"sigs.k8s.io/yaml"
)

// Row is one line of a command's output for -o name and custom-columns.
type Row struct {
	// Name is what -o name prints (an etcd key, a backup directory).
	Name string
	// Obj is what custom-columns' JSONPath expressions read.
	Obj any
}

// Output is what one command has to say, in every form -o can ask for.
type Output struct {
	// Doc is the whole document (json, yaml, jsonpath, go-template).
	Doc any
	// Rows are its lines for name and custom-columns.
	Rows []Row
	// EachRow, when set, gives the rows one at a time instead.
	EachRow func(fn func(Row) error) error
	// Human writes the table or wide form.
	Human func(w io.Writer, wide, noHeaders bool) error
	// JSON, when set, writes -o json as the JSON printer would, without
	// holding the whole document in memory.
	JSON func(w io.Writer) error
}

// Each calls fn with every row.
func (o Output) Each(fn func(Row) error) error {
	if o.EachRow != nil {
		return o.EachRow(fn)
	}
	for _, r := range o.Rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// RowsOf makes one row of each item, named by name.
func RowsOf[T any](items []T, name func(*T) string) []Row {
	rows := make([]Row, len(items))
	for i := range items {
		rows[i] = Row{Name: name(&items[i]), Obj: &items[i]}
	}
	return rows
}

// NonNil is s, or an empty slice for nil: a document says [] rather than
// null.
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Structured writes v as indented JSON or YAML (format "yaml").
func Structured(out io.Writer, format string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", format, err)
	}
	if format == "yaml" {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return fmt.Errorf("encode yaml: %w", err)
		}
	} else {
		b = append(b, '\n')
	}
	_, err = out.Write(b)
	return err
}

// Object is a decoded object: YAML in its human form.
func Object(obj any) Output {
	return Output{Doc: obj, Human: func(w io.Writer, _, _ bool) error { return Structured(w, "yaml", obj) }}
}

// keys is "1 key" or "n keys".
func keys(n int) string { return plural.Of(n, "key") }

// Plural is n and the noun, in the plural unless n is 1 ("1 key", "2
// keys"), for cmd's questions.
func Plural(n int, noun string) string { return plural.Of(n, noun) }
