package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/regghost/regghost/pkg/dangling"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/objread"
)

// findDangling adds to rep the references of live objects into what is gone
// or down (into rep.Namespace only, when the scan has one).
func (rs *readSession) findDangling(ctx context.Context, g *globalOptions, rep *etcdscan.Report) error {
	reader := &objread.Reader{Registry: g.prefix}
	o := dangling.Options{Registry: g.prefix, Namespace: rep.Namespace, Reader: reader}
	if rs.dec != nil {
		reader.Decrypter = rs.dec
	}
	if rs.view != nil && rep.APIWitness {
		reader.API, o.API = rs.view, rs.view
	}
	refs, unreadable, err := dangling.Find(ctx, rs.store, o)
	if err != nil {
		return fmt.Errorf("dangling references: %w", err)
	}
	rep.Dangling = refs
	check := etcdscan.Check{Name: "dangling references", Done: len(unreadable) == 0,
		Note: "APIServices, webhook configurations, CRD conversion webhooks, RBAC bindings and PersistentVolumes read"}
	if len(unreadable) > 0 {
		check.Note = fmt.Sprintf("%d objects that could point into a namespace cannot be read here: %s", len(unreadable), strings.Join(unreadable, ", "))
	}
	rep.Checks = append(rep.Checks, check)
	return nil
}

// printDangling writes the dangling references: one line each, then what
// breaks and the fix, wrapped.
func printDangling(out io.Writer, refs []etcdscan.DanglingRef) {
	if len(refs) == 0 {
		return
	}
	gone := 0
	for _, d := range refs {
		if d.State == etcdscan.DanglingGone {
			gone++
		}
	}
	fmt.Fprintf(out, "\nDangling references: %d gone, %d down\n", gone, len(refs)-gone)
	for _, d := range refs {
		who := d.Kind + " " + d.Name
		if d.Namespace != "" {
			who = d.Kind + " " + d.Namespace + "/" + d.Name
		}
		mark := ""
		if d.SingleWitness {
			mark = " *"
		}
		printWrapped(out, fmt.Sprintf("%s %s: %s -> %s is %s%s", strings.ToUpper(string(d.State)), escapeCell(who), escapeCell(d.Field), escapeCell(d.Target), d.State, mark))
		printWrapped(out, "  "+escapeCell(d.Consequence))
		printWrapped(out, "  fix: "+escapeCell(d.Fix))
		if len(d.ManagedBy) > 0 {
			printWrapped(out, "  managed by: "+escapeCell(strings.Join(d.ManagedBy, "; ")))
		}
	}
}
