package cli

import (
	"flag"
	"io"
	"strconv"

	"google.golang.org/grpc/grpclog"
	"k8s.io/klog/v2"
)

// SilenceLibraryLogs keeps the libraries' own logging (klog, used by
// k8s.io/apiserver's transformers and client-go; grpc-go's) out of regghost's output:
// what matters of it reaches the user as a finding or a one-line error.
func SilenceLibraryLogs() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	// grpc-go writes its errors to stderr by default (dial failures while
	// a member is down): the etcd connection layer says what matters.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
}

// LibraryLogs shows the libraries' logging on w at level (kubectl's -v: 6
// shows every request to the API server; the root refuses 8 and more,
// where client-go prints bodies: Secrets' data, TokenReviews' tokens: a
// usage error); level 0 keeps them silent.
func LibraryLogs(level int, w io.Writer) error {
	if level < 0 || level > 7 {
		return Usage("-v must be 0 to 7, got %d: from 8 the libraries print request and response bodies (Secrets' data, bearer tokens)", level)
	}
	if level == 0 {
		return nil
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", strconv.Itoa(level))
	klog.SetOutput(w)
	return nil
}
