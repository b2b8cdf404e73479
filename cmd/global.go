package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	etcdflags "go.etcd.io/etcd/pkg/v3/flags"

	"github.com/regghost/regghost/internal/table"
	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/dbfile"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdconn"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/nodeconfig"
)

// globalOptions are the flags every command shares.
type globalOptions struct {
	etcd       etcdconn.Config
	prefix     string
	kubeconfig string
	context    string
	noAPI      bool
	// db is an etcd db file to read instead of a live etcd.
	db string
	// encryptionConfig is a kube-apiserver EncryptionConfiguration file.
	encryptionConfig string
	cpuProfile       string
	// nodeRoot is where the node's files are, for nodeconfig.
	nodeRoot string
	// flags are the command's flags, and onCommandLine the settings given
	// as flags before ETCDCTL_* variables filled the others (noteGiven):
	// discovery leaves every setting given alone and says where it came from.
	flags         flagSet
	onCommandLine map[string]bool
	errOut        io.Writer
	discovered    sync.Once
}

// flagSet is what discovery asks of the command's flags (a *pflag.FlagSet).
type flagSet interface {
	// Changed says whether the flag was set, on the command line or since.
	Changed(name string) bool
}

// readSettings say how a command reads a live etcd.
type readSettings struct {
	// pageSize is keys per Range request when paging.
	pageSize int64
	// stream uses RangeStream where the server has it.
	stream bool
	// maxKeysPerSecond paces reads (0: unpaced).
	maxKeysPerSecond int
}

// scanReads are the reads of a scan unless its flags say otherwise.
func scanReads() readSettings {
	return readSettings{pageSize: etcdscan.DefaultPageSize, stream: true, maxKeysPerSecond: etcdscan.DefaultMaxKeysPerSecond}
}

func (g *globalOptions) startProfile() error {
	if g.cpuProfile == "" {
		return nil
	}
	f, err := os.Create(g.cpuProfile)
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	return pprof.StartCPUProfile(f)
}

// openStore opens the keyspace: the --db file, or etcd pinned at its current
// revision. close releases it.
func (g *globalOptions) openStore(ctx context.Context, reads readSettings) (store etcdscan.Store, close func(), err error) {
	if g.db != "" {
		s, err := g.openDB(g.db)
		if err != nil {
			return nil, nil, err
		}
		return s, func() { s.Close() }, nil
	}
	cli, err := g.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	es, err := etcdscan.NewEtcdStore(ctx, cli, reads.pageSize)
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	if !reads.stream {
		es.DisableStreaming()
	}
	es.SetMaxKeysPerSecond(reads.maxKeysPerSecond)
	return es, func() { cli.Close() }, nil
}

// openDB opens a db file (an etcd or k3s snapshot, plain or zipped, or a
// member's db) and says on stderr which revision it holds and when it was
// taken: every command reading a db file goes through it.
func (g *globalOptions) openDB(path string) (*dbfile.Store, error) {
	s, info, err := dbfile.OpenSnapshot(path)
	if err != nil {
		return nil, err
	}
	g.sayDB(info)
	return s, nil
}

// sayDB writes the line that says what a db file is.
func (g *globalOptions) sayDB(info dbfile.Info) {
	if g.errOut != nil {
		table.Wrapped(g.errOut, "regghost: "+info.String())
	}
}

// readSession is what reading the cluster needs: the keyspace (pinned at
// one revision), the local decrypter and the API server, opened once.
type readSession struct {
	store etcdscan.Store
	dec   *decrypt.Decrypter
	view  *apiview.View
	// why says why view is nil.
	why   string
	close func()
	// quiet leaves out the progress line (serve scans in the background).
	quiet bool
}

// openRead opens the keyspace, --encryption-provider-config and the API
// server.
func (g *globalOptions) openRead(ctx context.Context, reads readSettings) (*readSession, error) {
	store, closeStore, err := g.openStore(ctx, reads)
	if err != nil {
		return nil, err
	}
	dec, err := g.decrypter(ctx)
	if err != nil {
		closeStore()
		return nil, err
	}
	view, why := g.api()
	return &readSession{store: store, dec: dec, view: view, why: why, close: closeStore}, nil
}

// decrypter loads --encryption-provider-config, if given.
func (g *globalOptions) decrypter(ctx context.Context) (*decrypt.Decrypter, error) {
	if g.encryptionConfig == "" {
		return nil, nil
	}
	return decrypt.Load(ctx, g.encryptionConfig)
}

// connect opens etcd.
func (g *globalOptions) connect(ctx context.Context) (*clientv3.Client, error) {
	g.discover()
	return g.etcd.Connect(ctx)
}

// noteGiven records which of the settings discovery fills were given as
// flags. It runs before the ETCDCTL_* variables are applied: a setting
// changed after that came from its variable.
func (g *globalOptions) noteGiven(fs flagSet) {
	g.flags, g.onCommandLine = fs, map[string]bool{}
	for _, name := range nodeconfig.Flags {
		g.onCommandLine[name] = fs.Changed(name)
	}
}

// given names, for each setting given explicitly, the flag or ETCDCTL_*
// variable it came from.
func (g *globalOptions) given() nodeconfig.Given {
	out := nodeconfig.Given{}
	for _, name := range nodeconfig.Flags {
		switch {
		case g.onCommandLine[name]:
			out[name] = "--" + name
		case g.flags.Changed(name):
			out[name] = etcdflags.FlagToEnv("ETCDCTL", name)
		}
	}
	return out
}

// discover reads kube-apiserver's own etcd settings from the node's files
// and fills each setting no flag or ETCDCTL_* variable gave: endpoints, TLS
// files, prefix and encryption config. It says in one line what it used and
// where each setting came from, and notes a given prefix or encryption
// config that disagrees with the node's.
func (g *globalOptions) discover() {
	g.discovered.Do(func() {
		// Without noteGiven it cannot tell what was given: take nothing.
		if g.db != "" || g.flags == nil {
			return
		}
		f, err := nodeconfig.Discover(g.nodeRoot)
		if errors.Is(err, nodeconfig.ErrNotFound) {
			return
		}
		if err != nil {
			fmt.Fprintf(g.errOut, "regghost: could not read this node's kube-apiserver configuration (%v); nothing was taken from it\n", oneLine(err))
			return
		}
		cur := nodeconfig.Settings{Endpoints: g.etcd.Endpoints, CACert: g.etcd.CACert, Cert: g.etcd.Cert, Key: g.etcd.Key,
			Prefix: g.prefix, EncryptionConfig: g.encryptionConfig}
		m := nodeconfig.Fill(cur, g.given(), f)
		s := m.Settings
		g.etcd.Endpoints, g.etcd.CACert, g.etcd.Cert, g.etcd.Key = s.Endpoints, s.CACert, s.Cert, s.Key
		g.prefix, g.encryptionConfig = s.Prefix, s.EncryptionConfig
		if m.Line != "" {
			fmt.Fprintf(g.errOut, "regghost: %s\n", m.Line)
		}
		for _, n := range m.Notes {
			fmt.Fprintf(g.errOut, "regghost: %s\n", n)
		}
	})
}

// session bounds ctx by --command-timeout and opens etcd; done cancels and closes.
func (g *globalOptions) session(ctx context.Context) (context.Context, *clientv3.Client, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, g.etcd.CommandTimeout)
	cli, err := g.connect(ctx)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, cli, func() { cli.Close(); cancel() }, nil
}

// api connects to the API server. It returns nil and the reason when the API
// server is not used or cannot be reached; scan then works from etcd alone.
func (g *globalOptions) api() (*apiview.View, string) {
	if g.noAPI {
		return nil, "--no-api given"
	}
	if g.db != "" {
		return nil, "reading the db file " + g.db + " offline"
	}
	return apiview.Open(apiview.Options{Kubeconfig: g.kubeconfig, Context: g.context, Timeout: g.etcd.DialTimeout * 2})
}

func oneLine(err error) string {
	s := err.Error()
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
