package apiview

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/regghost/regghost/pkg/filesum"
)

// DefaultMinInterval is the least time between two reads of a Loader's
// files.
const DefaultMinInterval = time.Second

// Loader reads the kubeconfig as Open does, and reads it again when a file
// it came from changes on disk: the kubeconfig files, and the certificate
// authority, client certificate and key files they name. A long-running
// command (serve) asks it before each use, so a kubeconfig rewritten in
// place (a renewed client certificate embedded in it, another identity) is
// taken without a restart. Files are compared by content. (A token file is
// not watched: client-go reads it again by itself, as it does the
// ServiceAccount token of a pod.) It is safe for concurrent use.
type Loader struct {
	o Options
	// MinInterval is the least time between two reads of the files
	// (DefaultMinInterval when 0): callers may ask on every request.
	MinInterval time.Duration
	// OnChange, when set, is called each time a changed kubeconfig was
	// loaded (not the first time), with the files that were compared.
	OnChange func(files []string)

	mu      sync.Mutex
	checked time.Time
	// kubeSum and refSum fingerprint the kubeconfig files and the files
	// cfg names, as they were when cfg was loaded.
	kubeSum, refSum string
	cfg             *rest.Config
	gen             uint64
	view            *View
	viewGen         uint64
}

// NewLoader returns a Loader that reads the kubeconfig at its first use.
func NewLoader(o Options) *Loader { return &Loader{o: o} }

// Config returns the client configuration and its generation, which grows
// each time a changed kubeconfig is loaded. When the files changed but
// cannot be loaded now (a file half written), the last good configuration
// is returned with the error, and the files are read again at the next
// call; before any could be loaded the configuration is nil.
func (l *Loader) Config() (*rest.Config, uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.config()
}

func (l *Loader) config() (*rest.Config, uint64, error) {
	every := l.MinInterval
	if every <= 0 {
		every = DefaultMinInterval
	}
	now := time.Now()
	if l.cfg != nil && now.Sub(l.checked) < every {
		return l.cfg, l.gen, nil
	}
	l.checked = now
	// Fingerprints are taken before the files are read: a file rewritten
	// while it is loaded is loaded again at the next call, never missed.
	kubeFiles := l.kubeconfigFiles()
	kubeSum := filesum.Of(kubeFiles...)
	if l.cfg != nil && kubeSum == l.kubeSum && filesum.Of(referenced(l.cfg)...) == l.refSum {
		return l.cfg, l.gen, nil
	}
	cfg, err := l.o.RESTConfig()
	if err != nil {
		return l.cfg, l.gen, fmt.Errorf("read the kubeconfig: %w", err)
	}
	refs := referenced(cfg)
	first := l.cfg == nil
	l.cfg, l.kubeSum, l.refSum = cfg, kubeSum, filesum.Of(refs...)
	l.gen++
	if !first && l.OnChange != nil {
		l.OnChange(append(kubeFiles, refs...))
	}
	return l.cfg, l.gen, nil
}

// Open is Open on the current configuration: the same View while the
// files are unchanged, a new one (checked to answer) after they change.
func (l *Loader) Open() (*View, string) {
	l.mu.Lock()
	cfg, gen, err := l.config()
	view, viewGen := l.view, l.viewGen
	l.mu.Unlock()
	if cfg == nil {
		return nil, "no usable kubeconfig: " + firstLine(err)
	}
	if view != nil && viewGen == gen {
		return view, ""
	}
	// Not under the lock: the API server may take its timeout to answer.
	view, why := open(cfg)
	if view == nil {
		return nil, why
	}
	l.mu.Lock()
	if gen >= l.viewGen {
		l.view, l.viewGen = view, gen
	}
	l.mu.Unlock()
	return view, ""
}

// kubeconfigFiles are the files the kubeconfig is loaded from, as the
// loading rules name them (present or not: one appearing is a change).
func (l *Loader) kubeconfigFiles() []string {
	rules := l.o.loadingRules()
	if rules.ExplicitPath != "" {
		return []string{rules.ExplicitPath}
	}
	return append([]string(nil), rules.Precedence...)
}

// referenced are the files a configuration names for TLS.
func referenced(cfg *rest.Config) []string {
	var out []string
	for _, f := range []string{cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.CertFile, cfg.TLSClientConfig.KeyFile} {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}
