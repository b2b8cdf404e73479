package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/repair"
)

func validateOutput(o string) error {
	switch o {
	case "table", "json", "yaml":
		return nil
	}
	return usageError("--output %q is not one of table, json, yaml", o)
}

// printStructured writes v as indented JSON or YAML.
func printStructured(out io.Writer, format string, v any) error {
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

func printReport(out io.Writer, format string, rep *etcdscan.Report) error {
	if format != "table" {
		if rep.Findings == nil {
			rep.Findings = []etcdscan.Finding{}
		}
		return printStructured(out, format, rep)
	}
	now := time.Now()
	if len(rep.Findings) > 0 {
		t := newTable(out, "KEY", "KIND", "NAMESPACE", "NAME", "CLASS", "WITNESSES", "REASON", "AGE", "REV")
		for _, f := range rep.Findings {
			classes := make([]string, len(f.Classes))
			for i, c := range f.Classes {
				classes[i] = string(c)
			}
			kind := f.Kind
			if kind == "" {
				kind = f.Resource
			}
			if err := t.Append([]string{f.Key, kind, f.Namespace, f.Name, strings.Join(classes, ","), shortWitnesses(&f), f.Reason(), age(now, f.Created), fmt.Sprint(f.ModRevision)}); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	scope := "all namespaces"
	if rep.Namespace != "" {
		scope = "namespace " + rep.Namespace
	}
	fmt.Fprintf(out, "\nScanned %d keys under %s (%s) at etcd revision %d.\n", rep.ScannedKeys, rep.Prefix, scope, rep.Revision)
	ghosts, suspects := 0, 0
	for _, f := range rep.Findings {
		if f.Ghost {
			ghosts++
		} else {
			suspects++
		}
	}
	single := 0
	for _, f := range rep.Findings {
		if f.SingleWitness {
			single++
		}
	}
	fmt.Fprintf(out, "Ghosts: %d%s\n", ghosts, classCounts(rep, true))
	if single > 0 {
		fmt.Fprintf(out, "  of which %d rest on a single witness (purge refuses them without %s)\n", single, repair.AcceptSingleWitnessFlag)
	}
	fmt.Fprintf(out, "Suspects: %d%s\n", suspects, classCounts(rep, false))
	if len(rep.Encrypted) > 0 {
		var keys []string
		for k, n := range rep.Encrypted {
			keys = append(keys, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(keys)
		fmt.Fprintf(out, "Encrypted values (provider/key): %s\n", strings.Join(keys, ", "))
	}
	for _, c := range rep.Checks {
		mark := "done"
		if !c.Done {
			mark = "NOT DONE"
		}
		fmt.Fprintf(out, "Check %s: %s; %s\n", c.Name, mark, c.Note)
	}
	return nil
}

// shortWitnesses is the WITNESSES column of the scan table.
func shortWitnesses(f *etcdscan.Finding) string {
	switch {
	case !f.Ghost:
		return "-"
	case f.SingleWitness:
		return "single"
	}
	return "two"
}

func classCounts(rep *etcdscan.Report, ghosts bool) string {
	var parts []string
	for _, c := range etcdscan.Classes {
		if c.Ghost() == ghosts && rep.Summary[c] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, rep.Summary[c]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func age(now time.Time, t *time.Time) string {
	if t == nil {
		return "-"
	}
	return duration.HumanDuration(now.Sub(*t))
}

// newTable returns a plain, grep-friendly table with the given header.
func newTable(out io.Writer, header ...string) *tablewriter.Table {
	t := tablewriter.NewTable(out,
		tablewriter.WithRendition(tw.Rendition{Borders: tw.BorderNone, Settings: tw.Settings{
			Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off},
			Lines:      tw.Lines{ShowHeaderLine: tw.Off},
		}}),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoFormat(tw.Off),
	)
	t.Header(header)
	return t
}
