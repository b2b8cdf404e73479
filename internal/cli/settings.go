package cli

import (
	"time"

	"github.com/spf13/pflag"
	etcdflags "go.etcd.io/etcd/pkg/v3/flags"
	"go.uber.org/zap"

	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/nodeconfig"
	"github.com/regghost/regghost/pkg/session"
)

// SettingsFlags binds the flags every command shares, as cli-runtime's
// ConfigFlags do kubectl's: how to reach the cluster into s, the
// libraries' log level -v into verbosity, and the hidden --cpuprofile.
func SettingsFlags(f *pflag.FlagSet, s *session.Settings, verbosity *int, cpuProfile *string) {
	f.StringSliceVar(&s.Etcd.Endpoints, "endpoints", []string{"127.0.0.1:2379"}, "etcd endpoints (env ETCDCTL_ENDPOINTS)")
	f.StringVar(&s.Etcd.CACert, "cacert", "", "CA bundle to verify etcd's certificate (env ETCDCTL_CACERT)")
	f.StringVar(&s.Etcd.Cert, "cert", "", "client certificate for etcd (env ETCDCTL_CERT)")
	f.StringVar(&s.Etcd.Key, "key", "", "client key for etcd (env ETCDCTL_KEY)")
	f.BoolVar(&s.Etcd.InsecureSkipVerify, "insecure-skip-tls-verify", false, "do not verify etcd's server certificate (env ETCDCTL_INSECURE_SKIP_TLS_VERIFY)")
	f.StringVar(&s.Etcd.User, "user", "", "etcd user for clusters with etcd auth (not a kubeconfig user); the password is asked on the terminal when etcd is first connected to (env ETCDCTL_USER)")
	f.StringVar(&s.Etcd.Password, "password", "", "etcd password for --user, instead of the question (env ETCDCTL_PASSWORD: keeps it out of ps and shell history)")
	f.DurationVar(&s.Etcd.DialTimeout, "dial-timeout", 5*time.Second, "timeout to connect to etcd")
	f.DurationVar(&s.Etcd.CommandTimeout, "command-timeout", 5*time.Minute, "timeout for the whole command")
	f.IntVar(&s.Etcd.MaxRequestBytes, "max-request-bytes", etcdwrite.DefaultMaxRequestBytes, "the largest request etcd accepts (its own --max-request-bytes): each write transaction carries at most this many bytes")
	f.StringVar(&s.Prefix, nodeconfig.FlagPrefix, "/registry/", "the key prefix kube-apiserver stores under (its --etcd-prefix), ending in /")
	f.StringVar(&s.Kubeconfig, "kubeconfig", "", "kubeconfig of the API server to compare with (env KUBECONFIG, else ~/.kube/config, else /etc/kubernetes/admin.conf)")
	f.StringVar(&s.Context, "context", "", "kubeconfig context to use")
	f.BoolVar(&s.NoAPI, "no-api", false, "do not contact the API server; decide from etcd alone")
	f.StringVar(&s.DB, "db", "", "read this etcd db file (snapshot or member/snap/db) instead of a live etcd, read-only")
	f.StringVar(&s.EncryptionConfig, "encryption-provider-config", "", "kube-apiserver EncryptionConfiguration to decrypt aescbc, aesgcm and secretbox values")
	f.StringVar(&s.NodeRoot, "node-root", EnvOr("REGGHOST_NODE_ROOT", "/"), "where the control-plane node's files are, to find etcd's endpoints, certificates, prefix and encryption config that no flag or ETCDCTL_* variable gives (env REGGHOST_NODE_ROOT)")
	f.IntVarP(verbosity, "v", "v", 0, "log level of the libraries regghost uses, on stderr, as in kubectl: -v=6 shows every API server request (0: silent; at most 7: bodies, which hold Secrets, are never printed)")
	f.StringVar(cpuProfile, "cpuprofile", "", "write a CPU profile to this file (for performance work)")
	_ = f.MarkHidden("cpuprofile")
}

// FillFromEnv lets the ETCDCTL_* variables fill the flags of fs not given,
// as in etcdctl (ETCDCTL_ENDPOINTS, ETCDCTL_CACERT, ETCDCTL_DIAL_TIMEOUT,
// ...). A flag given beside its variable wins: etcd's reader would exit on
// the conflict without a word (runbooks export the variables, then an
// operator adds a flag).
func FillFromEnv(fs *pflag.FlagSet) error {
	ShadowEnvByFlags(fs, "ETCDCTL")
	if err := etcdflags.SetPflagsFromEnv(zap.NewNop(), "ETCDCTL", fs); err != nil {
		return Usage("%v", err)
	}
	return nil
}
