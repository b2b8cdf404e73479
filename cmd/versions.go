package cmd

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/internal/table"
	"github.com/regghost/regghost/pkg/etcdscan"
)

type versionsOptions struct {
	namespace string
	print     *printFlags
}

func newVersionsCmd(g *globalOptions) *cobra.Command {
	o := &versionsOptions{print: newPrintFlags(true, "table")}
	c := &cobra.Command{
		Use:   "versions",
		Short: "Count stored objects per resource and stored version, and find those stored at a version nobody can read",
		Long: `versions scans the keyspace (as scan does) and counts, for every resource,
the objects stored at each apiVersion, and the encrypted ones by provider and
key. For custom resources it sets them against the CRD's spec.versions and
status.storedVersions. Objects stored at a version the CRD no longer lists or
serves, or that storedVersions forgot, and built-in objects stored at a version
this kube-apiserver release cannot decode, are stored-version findings, each
with the migration step. They are recoverable: purge never takes them unless
--force-class stored-version names the class. Exit code 3 when any is found.`,
		Example: `  regghost versions
  regghost versions -n lab -o json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := validateScanInput(o.namespace); err != nil {
				return err
			}
			if err := o.print.validate(); err != nil {
				return err
			}
			return runVersions(c.Context(), g, o, c.OutOrStdout())
		},
	}
	c.Flags().StringVarP(&o.namespace, "namespace", "n", "", "count only this namespace's objects")
	o.print.addFlags(c)
	return c
}

func runVersions(ctx context.Context, g *globalOptions, o *versionsOptions, out io.Writer) error {
	rep, err := scanReport(ctx, g, o.namespace, scanReads(), etcdscan.DefaultTerminatingAfter, etcdscan.DefaultAPICheckLimit)
	if err != nil {
		return err
	}
	defer rep.Close()
	var findings []etcdscan.Finding
	err = rep.Each(func(f *etcdscan.Finding) error {
		if f.Has(etcdscan.ClassStoredVersion) {
			findings = append(findings, *f)
		}
		return nil
	})
	if err != nil {
		return err
	}
	rows := make([]row, len(findings))
	for i := range findings {
		rows[i] = row{name: findings[i].Key, obj: &findings[i]}
	}
	if err := o.print.print(out, output{doc: map[string]any{"revision": rep.Revision, "versions": nonNil(rep.Versions), "findings": nonNil(findings)},
		rows: rows, human: func(w io.Writer, _, _ bool) error { return printVersions(w, rep, findings) }}); err != nil {
		return err
	}
	if len(findings) > 0 {
		return &exitError{code: ExitGhosts}
	}
	return nil
}

func printVersions(out io.Writer, rep *etcdscan.Report, findings []etcdscan.Finding) error {
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
	fmt.Fprintf(out, "\nCounted at etcd revision %d.\n", rep.Revision)
	if len(findings) == 0 {
		fmt.Fprintln(out, "No object is stored at a version that cannot be read.")
		return nil
	}
	fmt.Fprintf(out, "\n%d objects are stored at a version that cannot be read (or soon will not be):\n", len(findings))
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
