package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/table"
)

// Versions is the stored versions a scan counted, and the findings stored
// at a version that cannot be read, in every form -o can ask for; its rows
// are those findings.
func Versions(rep *etcdscan.Report, findings []etcdscan.Finding) Output {
	return Output{Doc: map[string]any{"revision": rep.Revision, "versions": NonNil(rep.Versions), "findings": NonNil(findings)},
		Rows: RowsOf(findings, func(f *etcdscan.Finding) string { return f.Key }), Human: func(w io.Writer, _, _ bool) error { return writeVersions(w, rep, findings) }}
}

// writeKeys writes the objects of each resource by the encryption key
// they are stored under, and whether it writes them now, once the
// encryption configuration was given (nothing without it: every key would
// be "not known"). A resource the configuration leaves in plaintext, all
// of it plaintext, is left out.
func writeKeys(out io.Writer, versions []etcdscan.StoredVersions) error {
	var t *table.Table
	var unknown []string
	said := map[string]string{"true": "yes", "false": "no: regghost migrate moves them", "unknown": "not known"}
	for _, v := range versions {
		if v.Writer == "" || (v.Writer == "identity" && len(v.Keys) == 1 && v.Keys["identity"] > 0) {
			continue
		}
		if t == nil {
			fmt.Fprintln(out)
			t = table.New(out, "RESOURCE", "ENCRYPTED WITH", "OBJECTS", "WRITES IT NOW")
		}
		for i, k := range slices.Sorted(maps.Keys(v.Keys)) {
			name := ""
			if i == 0 {
				name = v.Resource
			}
			if err := t.Append([]string{name, k, fmt.Sprint(v.Keys[k]), said[v.Writes(k)]}); err != nil {
				return err
			}
		}
		if v.WriterKeyIDUnknown != "" {
			unknown = append(unknown, fmt.Sprintf("%s: %s writes them; which of its key IDs it writes with is not known: %s.", v.Resource, v.Writer, v.WriterKeyIDUnknown))
		}
	}
	if t == nil {
		return nil
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, u := range unknown {
		table.Para(out, "", "  ", u)
	}
	return nil
}

// writeVersions writes the counts per resource and stored version, then
// the findings with their fix.
func writeVersions(out io.Writer, rep *etcdscan.Report, findings []etcdscan.Finding) error {
	t := table.New(out, "RESOURCE", "STORED AS", "OBJECTS", "CRD VERSIONS", "CRD STORED VERSIONS")
	for _, v := range rep.Versions {
		var at []string
		for a := range v.Stored {
			at = append(at, a)
		}
		sort.Strings(at)
		for i, a := range at {
			row := []string{"", a, fmt.Sprint(v.Stored[a]), "", ""}
			if i == 0 {
				row[0], row[3], row[4] = v.Resource, strings.Join(v.CRDVersions, ", "), strings.Join(v.CRDStoredVersions, ", ")
			}
			if err := t.Append(row); err != nil {
				return err
			}
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if err := writeKeys(out, rep.Versions); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nCounted at etcd revision %d.\n", rep.Revision)
	if len(findings) == 0 {
		fmt.Fprintln(out, "No object is stored at a version that cannot be read.")
		return nil
	}
	fmt.Fprintf(out, "\n%s stored at a version that cannot be read (or soon will not be):\n", plural.Verb(len(findings), "object", "is", "are"))
	ft := table.New(out, "KEY", "FIX")
	for _, f := range findings {
		for i, c := range f.Classes {
			if c == etcdscan.ClassStoredVersion {
				_ = ft.Append([]string{f.Key, f.Reasons[i]})
			}
		}
	}
	return ft.Render()
}
