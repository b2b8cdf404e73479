package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/regghost/regghost/internal/table"
)

// printFlags is the one output layer of every command: -o picks a printer
// once, as in kubectl. json, yaml, jsonpath and go-template print the
// command's whole document through k8s.io/cli-runtime's printers; name and
// custom-columns print its rows (kubectl's custom-columns printer); table and
// wide are the command's own human output.
type printFlags struct {
	output    string
	noHeaders bool
	// human are the human formats the command offers ("table", "wide");
	// the first is the default.
	human    []string
	rows     bool
	jsonYaml *genericclioptions.JSONYamlPrintFlags
	template *genericclioptions.KubeTemplatePrintFlags
	columns  *get.CustomColumnsPrintFlags
}

// newPrintFlags offers the given human formats (the first is the default)
// besides json, yaml, jsonpath and go-template; rows adds name and
// custom-columns. A command that prints tables (rows and table) offers wide
// too: its tables with every cell whole, where table cuts the longest cells
// to fit the screen.
func newPrintFlags(rows bool, human ...string) *printFlags {
	if rows && slices.Contains(human, "table") && !slices.Contains(human, "wide") {
		human = append(human, "wide")
	}
	return &printFlags{human: human, rows: rows, output: human[0],
		jsonYaml: genericclioptions.NewJSONYamlPrintFlags(), template: genericclioptions.NewKubeTemplatePrintFlags(),
		columns: get.NewCustomColumnsPrintFlags()}
}

func (p *printFlags) addFlags(c *cobra.Command) {
	c.Flags().StringVarP(&p.output, "output", "o", p.output, "output format: "+strings.Join(p.allowed(), ", "))
	c.Flags().BoolVar(&p.noHeaders, "no-headers", false, "print tables and custom columns without their header")
	p.template.AddFlags(c)
}

func (p *printFlags) allowed() []string {
	out := append([]string{}, p.human...)
	for _, f := range []string{"json", "yaml", "jsonpath=…", "jsonpath-file=…", "go-template=…", "go-template-file=…"} {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if p.rows {
		out = append(out, "name", "custom-columns=…", "custom-columns-file=…")
	}
	return out
}

// humanFormat reports whether -o asks for the command's own output, and
// whether wide.
func (p *printFlags) humanFormat() (ok, wide bool) {
	for _, h := range p.human {
		if p.output == h {
			return true, h == "wide"
		}
	}
	return false, false
}

// structured reports whether -o asks for a machine format (json, yaml, a
// template, name or columns): the command then prints nothing else on stdout.
func (p *printFlags) structured() bool {
	ok, _ := p.humanFormat()
	return !ok
}

// validate checks -o once, before anything runs.
func (p *printFlags) validate() error {
	if ok, _ := p.humanFormat(); ok {
		return nil
	}
	if p.output == "name" && p.rows {
		return nil
	}
	if _, err := p.printer(); err != nil {
		return usageError("--output %q: %s", p.output, strings.Join(strings.Fields(err.Error()), " "))
	}
	return nil
}

// printer returns the cli-runtime (or kubectl custom-columns) printer for -o.
func (p *printFlags) printer() (printers.ResourcePrinter, error) {
	if pr, err := p.jsonYaml.ToPrinter(p.output); !genericclioptions.IsNoCompatiblePrinterError(err) {
		return pr, err
	}
	if pr, err := p.template.ToPrinter(p.output); !genericclioptions.IsNoCompatiblePrinterError(err) {
		return pr, err
	}
	if p.rows {
		p.columns.NoHeaders = p.noHeaders
		if pr, err := p.columns.ToPrinter(p.output); !genericclioptions.IsNoCompatiblePrinterError(err) {
			return pr, err
		}
	}
	return nil, fmt.Errorf("not one of %s", strings.Join(p.allowed(), ", "))
}

// row is one line of a command's output for -o name and custom-columns.
type row struct {
	// name is what -o name prints (an etcd key, a backup directory).
	name string
	// obj is what custom-columns' JSONPath expressions read.
	obj any
}

// output is what one command has to say, in every form -o can ask for.
type output struct {
	// doc is the whole document (json, yaml, jsonpath, go-template).
	doc any
	// rows are its lines for name and custom-columns.
	rows []row
	// eachRow, when set, gives the rows one at a time instead.
	eachRow func(fn func(row) error) error
	// human writes the table or wide form.
	human func(w io.Writer, wide, noHeaders bool) error
	// json, when set, writes -o json as the JSON printer would, without
	// holding the whole document in memory.
	json func(w io.Writer) error
}

// each calls fn with every row.
func (o output) each(fn func(row) error) error {
	if o.eachRow != nil {
		return o.eachRow(fn)
	}
	for _, r := range o.rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// print writes o in the format -o chose. Everything goes through a writer
// that escapes terminal control characters: names and values come from
// etcd, and a name holding an escape sequence must not reach the terminal.
func (p *printFlags) print(w io.Writer, o output) error {
	sw := table.NewSafeWriter(w)
	if ok, wide := p.humanFormat(); ok {
		// Laid out for the terminal's width (at most 120 columns); -o wide
		// prints table cells whole.
		if err := o.human(&table.Layout{Writer: sw, Width: table.TermWidth(w), Full: wide}, wide, p.noHeaders); err != nil {
			return err
		}
		return sw.Flush()
	}
	if p.output == "name" {
		err := o.each(func(r row) error {
			_, err := fmt.Fprintln(sw, table.Escape(r.name))
			return err
		})
		if err != nil {
			return err
		}
		return sw.Flush()
	}
	if p.output == "json" && o.json != nil {
		if err := o.json(sw); err != nil {
			return err
		}
		return sw.Flush()
	}
	pr, err := p.printer()
	if err != nil {
		return usageError("--output %q: %v", p.output, err)
	}
	var obj runtime.Object
	if strings.HasPrefix(p.output, "custom-columns") {
		list := &unstructured.UnstructuredList{Object: map[string]any{}}
		err := o.each(func(r row) error {
			m, err := toMap(r.obj)
			if err != nil {
				return err
			}
			list.Items = append(list.Items, unstructured.Unstructured{Object: m})
			return nil
		})
		if err != nil {
			return err
		}
		obj = list
	} else {
		raw, err := json.Marshal(o.doc)
		if err != nil {
			return fmt.Errorf("encode output: %w", err)
		}
		// runtime.Unknown keeps the document's own field order in JSON.
		obj = &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
	}
	if err := pr.PrintObj(obj, sw); err != nil {
		return err
	}
	return sw.Flush()
}

// toMap turns v into the map a JSONPath reads, numbers kept exact.
func toMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode row: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	m := map[string]any{}
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode row: %w", err)
	}
	return m, nil
}
