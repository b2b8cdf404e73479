package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/regghost/regghost/pkg/usage"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/regghost/regghost/pkg/table"
)

// PrintFlags is the one output layer of every command: -o picks a printer
// once, as in kubectl. json, yaml, jsonpath and go-template print the
// command's whole document through k8s.io/cli-runtime's printers; name and
// custom-columns print its rows (kubectl's custom-columns printer); table and
// wide are the command's own human output.
type PrintFlags struct {
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

// NewPrintFlags offers the given human formats (the first is the default)
// besides json, yaml, jsonpath and go-template; rows adds name and
// custom-columns. A command that prints tables (rows and table) offers wide
// too: its tables with every cell whole, where table cuts the longest cells
// to fit the screen.
func NewPrintFlags(rows bool, human ...string) *PrintFlags {
	if rows && slices.Contains(human, "table") && !slices.Contains(human, "wide") {
		human = append(human, "wide")
	}
	return &PrintFlags{human: human, rows: rows, output: human[0],
		jsonYaml: genericclioptions.NewJSONYamlPrintFlags(), template: genericclioptions.NewKubeTemplatePrintFlags(),
		columns: get.NewCustomColumnsPrintFlags()}
}

// AddFlags adds -o, --no-headers and --template to c.
func (p *PrintFlags) AddFlags(c *cobra.Command) {
	c.Flags().StringVarP(&p.output, "output", "o", p.output, "output format: "+strings.Join(p.allowed(), ", "))
	c.Flags().BoolVar(&p.noHeaders, "no-headers", false, "print tables and custom columns without their header")
	p.template.AddFlags(c)
	// cli-runtime's text ends in a link no wrap can break.
	if f := c.Flags().Lookup("template"); f != nil {
		f.Usage = "template string or path to a template file, for -o go-template and go-template-file (Go's text/template)"
	}
}

// Output is the format -o names.
func (p *PrintFlags) Output() string { return p.output }

func (p *PrintFlags) allowed() []string {
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
func (p *PrintFlags) humanFormat() (ok, wide bool) {
	for _, h := range p.human {
		if p.output == h {
			return true, h == "wide"
		}
	}
	return false, false
}

// Structured reports whether -o asks for a machine format (json, yaml, a
// template, name or columns): the command then prints nothing else on stdout.
func (p *PrintFlags) Structured() bool {
	ok, _ := p.humanFormat()
	return !ok
}

// PlanWriter is where a write command shows its plan before the question:
// stdout, or in a machine format (stdout then holds the result alone) errOut.
func (p *PrintFlags) PlanWriter(out, errOut io.Writer) io.Writer {
	if p.Structured() {
		return errOut
	}
	return out
}

// PrintResult prints a write's result, o, and returns the write's error,
// werr, or else the printer's.
func (p *PrintFlags) PrintResult(w io.Writer, o Output, werr error) error {
	if err := p.Print(w, o); err != nil && werr == nil {
		return err
	}
	return werr
}

// Validate checks -o once, before anything runs.
func (p *PrintFlags) Validate() error {
	if ok, _ := p.humanFormat(); ok {
		return nil
	}
	if p.output == "name" && p.rows {
		return nil
	}
	if _, err := p.printer(); err != nil {
		return usage.Errorf("--output %q: %s", p.output, strings.Join(strings.Fields(err.Error()), " "))
	}
	return nil
}

// printer returns the cli-runtime (or kubectl custom-columns) printer for -o.
func (p *PrintFlags) printer() (printers.ResourcePrinter, error) {
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

// Print writes o in the format -o chose. Everything goes through a writer
// that escapes terminal control characters: names and values come from
// etcd, and a name holding an escape sequence must not reach the terminal.
func (p *PrintFlags) Print(w io.Writer, o Output) error {
	sw := table.NewSafeWriter(w)
	if ok, wide := p.humanFormat(); ok {
		// Laid out for the terminal's width (at most 120 columns); -o wide
		// prints table cells whole.
		if err := o.Human(&table.Layout{Writer: sw, Width: table.TermWidth(w), Full: wide}, wide, p.noHeaders); err != nil {
			return err
		}
		return sw.Flush()
	}
	if p.output == "name" {
		err := o.Each(func(r Row) error {
			_, err := fmt.Fprintln(sw, table.Escape(r.Name))
			return err
		})
		if err != nil {
			return err
		}
		return sw.Flush()
	}
	if p.output == "json" && o.JSON != nil {
		if err := o.JSON(sw); err != nil {
			return err
		}
		return sw.Flush()
	}
	pr, err := p.printer()
	if err != nil {
		return usage.Errorf("--output %q: %v", p.output, err)
	}
	var obj runtime.Object
	if strings.HasPrefix(p.output, "custom-columns") {
		list := &unstructured.UnstructuredList{Object: map[string]any{}}
		err := o.Each(func(r Row) error {
			m, err := toMap(r.Obj)
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
		raw, err := json.Marshal(o.Doc)
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
