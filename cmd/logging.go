package cmd

import (
	"flag"
	"io"

	"k8s.io/klog/v2"
)

// silenceLibraryLogs keeps the libraries' own logging (klog, used by
// k8s.io/apiserver's transformers and client-go) out of regghost's output:
// what matters of it reaches the user as a finding or a one-line error.
func silenceLibraryLogs() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
}
