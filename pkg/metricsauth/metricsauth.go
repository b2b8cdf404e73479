// Package metricsauth guards an exporter's endpoint the way Kubernetes' own
// control-plane components guard /metrics: the caller's bearer token is
// reviewed by the API server (TokenReview) and the user it names must be
// allowed the request's verb on the request's path, a non-resource URL
// (SubjectAccessReview: a scraper needs get on /metrics). It is built on
// k8s.io/apiserver's delegating authenticator and authorizer, the ones
// under the apiserver's DelegatingAuthenticationOptions, set up as
// controller-runtime's metrics filter sets them up: no anonymous user, so a
// request without a token is 401 Unauthorized and one whose user is not
// allowed 403 Forbidden. So that no token crosses the network in clear,
// ServingCert keeps a self-signed serving certificate for the endpoint, as
// kube-controller-manager does in its --cert-dir, and Loopback tells the
// one kind of address where plain HTTP may still be asked for.
package metricsauth

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
)

// The API server's answers are kept this long (k8s.io/apiserver's defaults
// for delegated authentication and authorization): a scrape every 30s costs
// at most one TokenReview and one SubjectAccessReview.
const (
	TokenCacheTTL = 10 * time.Second
	AllowCacheTTL = 10 * time.Second
	DenyCacheTTL  = 10 * time.Second
	// ReviewTimeout bounds one TokenReview.
	ReviewTimeout = 10 * time.Second
)

// ConfigSource gives the configuration of the API client that asks for the
// reviews, and a generation that changes when it changes
// (*apiview.Loader).
type ConfigSource interface {
	Config() (*rest.Config, uint64, error)
}

// Delegated is the guard. The reviewing clients are built again whenever
// the configuration's generation changes (a kubeconfig rewritten on disk).
type Delegated struct {
	src ConfigSource
	log *slog.Logger

	mu    sync.Mutex
	gen   uint64
	authn authenticator.Request
	authz authorizer.Authorizer
}

// New returns a guard asking the API server src points at. It checks that
// the configuration can be read now; the API server is asked nothing until
// the first request.
func New(src ConfigSource, log *slog.Logger) (*Delegated, error) {
	d := &Delegated{src: src, log: log}
	if _, _, err := d.current(); err != nil {
		return nil, err
	}
	return d, nil
}

// current returns the authenticator and authorizer for the configuration
// now, building them again when it changed.
func (d *Delegated) current() (authenticator.Request, authorizer.Authorizer, error) {
	cfg, gen, err := d.src.Config()
	d.mu.Lock()
	defer d.mu.Unlock()
	if cfg == nil {
		return nil, nil, fmt.Errorf("delegated authentication: %w", err)
	}
	if err != nil {
		// The files changed and cannot be read now: the last good
		// configuration goes on serving.
		d.log.Warn("kubeconfig unreadable; the last one read goes on reviewing tokens", "err", err.Error())
	}
	if d.authn != nil && gen == d.gen {
		return d.authn, d.authz, nil
	}
	authn, authz, err := build(cfg)
	if err != nil {
		return nil, nil, err
	}
	d.authn, d.authz, d.gen = authn, authz, gen
	return authn, authz, nil
}

// build makes the delegating authenticator and authorizer on cfg.
func build(cfg *rest.Config) (authenticator.Request, authorizer.Authorizer, error) {
	cfg = rest.CopyConfig(cfg)
	// Each review's own bound (the witness's requests have theirs).
	cfg.Timeout = ReviewTimeout
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	authnClient, err := authenticationv1.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("TokenReview client: %w", err)
	}
	authzClient, err := authorizationv1.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("SubjectAccessReview client: %w", err)
	}
	backoff := retryBackoff()
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		// Anonymous nil: a request without a token is not a user.
		TokenAccessReviewClient:  authnClient,
		TokenAccessReviewTimeout: ReviewTimeout,
		WebhookRetryBackoff:      &backoff,
		CacheTTL:                 TokenCacheTTL,
	}.New()
	if err != nil {
		return nil, nil, fmt.Errorf("delegating authenticator: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: authzClient,
		AllowCacheTTL:             AllowCacheTTL,
		DenyCacheTTL:              DenyCacheTTL,
		WebhookRetryBackoff:       &backoff,
	}.New()
	if err != nil {
		return nil, nil, fmt.Errorf("delegating authorizer: %w", err)
	}
	return authn, authz, nil
}

// retryBackoff is k8s.io/apiserver's default for its review webhooks.
func retryBackoff() wait.Backoff {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// refusedToken is the error k8s.io/apiserver's bearer token authenticator
// returns for a token the TokenReview did not authenticate.
const refusedToken = "invalid bearer token"

// Wrap returns next behind the guard: 401 without a token the API server
// accepts (or when it could not review it: the cause is logged, not told
// to the caller), 403 when its user may not use the request's verb on the
// path, 500 when the access could not be reviewed.
func (d *Delegated) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authn, authz, err := d.current()
		if err != nil {
			d.log.Error("cannot review the request", "path", r.URL.Path, "err", err.Error())
			http.Error(w, "Internal Server Error: cannot review the request", http.StatusInternalServerError)
			return
		}
		res, ok, err := authn.AuthenticateRequest(r)
		if err != nil || !ok {
			// As kube-apiserver's own filter does: any failure to
			// authenticate is 401. A refused token is routine; a review
			// that could not be made (the API server away) is logged.
			if err != nil && err.Error() != refusedToken {
				d.log.Warn("token review failed", "path", r.URL.Path, "err", err.Error())
			}
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := authorizer.AttributesRecord{User: res.User, Verb: strings.ToLower(r.Method), Path: r.URL.Path}
		decision, reason, err := authz.Authorize(r.Context(), attrs)
		if err != nil {
			d.log.Error("access review failed", "user", res.User.GetName(), "path", r.URL.Path, "err", err.Error())
			http.Error(w, "Internal Server Error: access could not be reviewed", http.StatusInternalServerError)
			return
		}
		if decision != authorizer.DecisionAllow {
			msg := fmt.Sprintf("Forbidden: user %q may not %s path %q", res.User.GetName(), attrs.Verb, attrs.Path)
			if reason != "" {
				msg += ": " + reason
			}
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
