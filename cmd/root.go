// Package cmd holds regghost's cobra commands: flags, wiring and output.
// Everything they do is done by the packages under pkg/.
package cmd

import (
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"
	etcdflags "go.etcd.io/etcd/pkg/v3/flags"
	"go.uber.org/zap"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/help"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/nodeconfig"
	"github.com/regghost/regghost/pkg/version"
)

// Exit codes, documented in the README (cli's).
const (
	ExitOK     = cli.ExitOK
	ExitError  = cli.ExitError
	ExitUsage  = cli.ExitUsage
	ExitGhosts = cli.ExitGhosts
)

// clock is regghost's time: ages, stuck thresholds and backup names are
// read from it (the golden tests fix it).
var clock = time.Now

// NewRoot builds the regghost command tree writing to out and errOut.
func NewRoot(in io.Reader, out, errOut io.Writer) *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:           "regghost",
		Short:         "Find and safely remove ghost resources in a Kubernetes cluster's etcd",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetFlagErrorFunc(cli.FlagError)
	f := root.PersistentFlags()
	f.StringSliceVar(&g.Etcd.Endpoints, "endpoints", []string{"127.0.0.1:2379"}, "etcd endpoints (env ETCDCTL_ENDPOINTS)")
	f.StringVar(&g.Etcd.CACert, "cacert", "", "CA bundle to verify etcd's certificate (env ETCDCTL_CACERT)")
	f.StringVar(&g.Etcd.Cert, "cert", "", "client certificate for etcd (env ETCDCTL_CERT)")
	f.StringVar(&g.Etcd.Key, "key", "", "client key for etcd (env ETCDCTL_KEY)")
	f.BoolVar(&g.Etcd.InsecureSkipVerify, "insecure-skip-tls-verify", false, "do not verify etcd's server certificate (env ETCDCTL_INSECURE_SKIP_TLS_VERIFY)")
	f.StringVar(&g.Etcd.User, "user", "", "etcd user for clusters with etcd auth (not a kubeconfig user); the password is asked on the terminal when etcd is first connected to (env ETCDCTL_USER)")
	f.StringVar(&g.Etcd.Password, "password", "", "etcd password for --user, instead of the question (env ETCDCTL_PASSWORD: keeps it out of ps and shell history)")
	f.DurationVar(&g.Etcd.DialTimeout, "dial-timeout", 5*time.Second, "timeout to connect to etcd")
	f.DurationVar(&g.Etcd.CommandTimeout, "command-timeout", 5*time.Minute, "timeout for the whole command")
	f.IntVar(&g.Etcd.MaxRequestBytes, "max-request-bytes", etcdwrite.DefaultMaxRequestBytes, "the largest request etcd accepts (its own --max-request-bytes): each write transaction carries at most this many bytes")
	f.StringVar(&g.Prefix, nodeconfig.FlagPrefix, "/registry/", "the key prefix kube-apiserver stores under (its --etcd-prefix), ending in /")
	f.StringVar(&g.Kubeconfig, "kubeconfig", "", "kubeconfig of the API server to compare with (env KUBECONFIG, else ~/.kube/config, else /etc/kubernetes/admin.conf)")
	f.StringVar(&g.Context, "context", "", "kubeconfig context to use")
	f.BoolVar(&g.NoAPI, "no-api", false, "do not contact the API server; decide from etcd alone")
	f.StringVar(&g.DB, "db", "", "read this etcd db file (snapshot or member/snap/db) instead of a live etcd, read-only")
	f.StringVar(&g.EncryptionConfig, "encryption-provider-config", "", "kube-apiserver EncryptionConfiguration to decrypt aescbc, aesgcm and secretbox values")
	f.StringVar(&g.NodeRoot, "node-root", cli.EnvOr("REGGHOST_NODE_ROOT", "/"), "where the control-plane node's files are, to find etcd's endpoints, certificates, prefix and encryption config that no flag or ETCDCTL_* variable gives (env REGGHOST_NODE_ROOT)")
	f.IntVarP(&g.verbosity, "v", "v", 0, "log level of the libraries regghost uses, on stderr, as in kubectl: -v=6 shows every API server request (0: silent; at most 7: bodies, which hold Secrets, are never printed)")
	f.StringVar(&g.cpuProfile, "cpuprofile", "", "write a CPU profile to this file (for performance work)")
	_ = f.MarkHidden("cpuprofile")
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if err := g.startProfile(); err != nil {
			return err
		}
		g.noteGiven(c.Root().PersistentFlags())
		// ETCDCTL_* variables fill the flags not given, as in etcdctl
		// (ETCDCTL_ENDPOINTS, ETCDCTL_CACERT, ETCDCTL_DIAL_TIMEOUT, ...). A
		// flag given beside its variable wins: etcd's reader would exit on
		// the conflict without a word (runbooks export the variables, then
		// an operator adds a flag).
		cli.ShadowEnvByFlags(c.Root().PersistentFlags(), "ETCDCTL")
		if err := etcdflags.SetPflagsFromEnv(zap.NewNop(), "ETCDCTL", c.Root().PersistentFlags()); err != nil {
			return cli.Usage("%v", err)
		}
		g.errOut = c.ErrOrStderr()
		g.Notices = render.Notices(g.errOut)
		if g.verbosity < 0 || g.verbosity > 7 {
			return cli.Usage("-v must be 0 to 7, got %d: from 8 the libraries print request and response bodies (Secrets' data, bearer tokens)", g.verbosity)
		}
		cli.LibraryLogs(g.verbosity, g.errOut)
		if err := cli.CheckDurations(c); err != nil {
			return err
		}
		if err := g.CheckFlags(); err != nil {
			return cli.Usage("%v", err)
		}
		g.Etcd.AskPassword = cli.PasswordAsker(in, errOut, g.Etcd.User)
		return nil
	}
	root.AddCommand(newScanCmd(g), newGetCmd(g), newPurgeCmd(g), newRestoreCmd(g), newSnapshotCmd(g), newBackupCmd(), newLsCmd(g), newDiffCmd(g), newVersionsCmd(g), newMigrateCmd(g), newUnstickCmd(g), newDanglingCmd(g), newRecoverCmd(g), newHistoryCmd(g), newServeCmd(g), newSpaceCmd(g), newMembersCmd(g), newLeasesCmd(g), newVersionCmd(), help.OptionsCommand(), newOverridesCmd())
	help.Group(root)
	help.Set(root)
	cli.UsageArgs(root)
	cli.Completions(root, completing{g})
	return root
}

// Execute runs regghost with the process's arguments and returns its exit code.
func Execute() int {
	return Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// Run runs regghost with args and returns its exit code. Errors are printed
// as one line on errOut.
func Run(args []string, in io.Reader, out, errOut io.Writer) int {
	cli.SilenceLibraryLogs()
	root := NewRoot(in, out, errOut)
	root.SetArgs(args)
	if cli.UnknownInGroup(root, args, errOut) {
		return ExitUsage
	}
	err := root.Execute()
	// Flush a --cpuprofile whatever the outcome; a no-op when none runs.
	pprof.StopCPUProfile()
	return cli.Report(errOut, err)
}
