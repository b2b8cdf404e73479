// Package notice is the one shape in which a package below cmd/ tells the
// person running regghost something while a command runs: a setting
// discovered, a lock waited for, a signal taken, a warning. A package
// hands a Notice, words without layout, to the Func it was given; cmd/
// lays each one out (its "regghost: " prefix, its width), as kubectl's
// drain takes callbacks and prints nothing itself. No package below cmd/
// writes to a terminal.
package notice

// Kind says what a notice is.
type Kind int

const (
	// Info is something done or taken: a setting discovered, a lock
	// waited for, a step begun.
	Info Kind = iota
	// Warning is something to know before trusting the outcome.
	Warning
)

// Notice is one thing said: one sentence or a few, in words, no prefix
// and no line breaks of its own.
type Notice struct {
	Kind Kind
	Text string
}

// Func receives the notices of a run, in order. A nil Func drops them.
type Func func(Notice)

// Info says something done or taken.
func (f Func) Info(text string) { f.say(Info, text) }

// Warn says something to know before trusting the outcome: each of
// texts, one notice each.
func (f Func) Warn(texts ...string) {
	for _, t := range texts {
		f.say(Warning, t)
	}
}

func (f Func) say(k Kind, text string) {
	if f != nil {
		f(Notice{Kind: k, Text: text})
	}
}

// Collect is a Func that keeps every notice in *into (for tests and for
// a caller that says them later).
func Collect(into *[]Notice) Func {
	return func(n Notice) { *into = append(*into, n) }
}

// Texts are the texts of ns, warnings prefixed "warning: ".
func Texts(ns []Notice) []string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.String())
	}
	return out
}

// String is the notice's text, a warning's prefixed "warning: ".
func (n Notice) String() string {
	if n.Kind == Warning {
		return "warning: " + n.Text
	}
	return n.Text
}
