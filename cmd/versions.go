package cmd

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/session"
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
	rep, err := scanReport(ctx, g, o.namespace, session.ScanReads(), etcdscan.DefaultTerminatingAfter, etcdscan.DefaultAPICheckLimit)
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
	if err := o.print.print(out, render.Versions(rep, findings)); err != nil {
		return err
	}
	if len(findings) > 0 {
		return &exitError{code: ExitGhosts}
	}
	return nil
}
