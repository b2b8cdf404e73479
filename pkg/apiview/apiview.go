// Package apiview asks a kube-apiserver what it serves and whether it can
// read particular objects, so etcd findings can be checked against it.
package apiview

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/regghost/regghost/pkg/catalog"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// View is a connection to one kube-apiserver.
type View struct {
	disc discovery.DiscoveryInterface
	meta metadata.Interface
	dyn  dynamic.Interface
	// Host is the API server address, for reports.
	Host string
	// Config is how to reach it, for the clients of the write path.
	Config *rest.Config
	// ServerVersion is its gitVersion, once Version was asked.
	ServerVersion string
}

// New connects to the API server described by cfg.
func New(cfg *rest.Config) (*View, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("api server discovery client: %w", err)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("api server metadata client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("api server dynamic client: %w", err)
	}
	return &View{disc: disc, meta: mc, dyn: dyn, Host: cfg.Host, Config: cfg}, nil
}

// Version returns the API server's version, which also proves it is reachable.
func (v *View) Version() (string, error) {
	info, err := v.disc.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("api server %s: %w", v.Host, err)
	}
	return info.GitVersion, nil
}

// Catalog discovers every served resource. Groups whose discovery failed
// (an unavailable aggregated API) are recorded as failed in the catalog.
func (v *View) Catalog(ctx context.Context) (*catalog.Catalog, error) {
	lists, err := v.disc.ServerPreferredResources()
	var failed []string
	if err != nil {
		var gdf *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gdf) {
			return nil, fmt.Errorf("discover resources on %s: %w", v.Host, err)
		}
		for gv := range gdf.Groups {
			failed = append(failed, gv.Group)
		}
	}
	custom, err := v.crdNames(ctx)
	if err != nil {
		return nil, err
	}
	var rs []catalog.Resource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") { // subresources are not stored
				continue
			}
			rs = append(rs, catalog.Resource{
				Group: gv.Group, Version: gv.Version, Resource: r.Name, Kind: r.Kind,
				Namespaced: r.Namespaced, Custom: custom[r.Name+"."+gv.Group],
			})
		}
	}
	return catalog.New("api server discovery ("+v.Host+")", rs, failed), nil
}

func (v *View) crdNames(ctx context.Context) (map[string]bool, error) {
	names := map[string]bool{}
	list, err := v.meta.Resource(crdGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return names, nil
		}
		return nil, fmt.Errorf("list CustomResourceDefinitions on %s: %w", v.Host, err)
	}
	for _, item := range list.Items {
		names[item.Name] = true
	}
	return names, nil
}

// Get reads one object's metadata through the API server.
func (v *View) Get(ctx context.Context, r catalog.Resource, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
	if namespace != "" {
		return v.meta.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return v.meta.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
}

// Object reads one whole object through the API server, which holds the
// encryption keys regghost may lack.
func (v *View) Object(ctx context.Context, r catalog.Resource, namespace, name string) (*unstructured.Unstructured, error) {
	gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
	if namespace != "" {
		return v.dyn.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return v.dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
}

// Address names the API server, for evidence.
func (v *View) Address() string { return v.Host }

// Serves reports whether the API server serves a resource now: a list of
// at most one object succeeds.
func (v *View) Serves(ctx context.Context, r catalog.Resource) error {
	gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
	_, err := v.meta.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
	return err
}

// Now is the API server's clock: the Date header of its answer to
// /version (to the second).
func (v *View) Now(ctx context.Context) (time.Time, error) {
	hc, err := rest.HTTPClientFor(v.Config)
	if err != nil {
		return time.Time{}, fmt.Errorf("api server %s: %w", v.Host, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(v.Config.Host, "/")+"/version", nil)
	if err != nil {
		return time.Time{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return time.Time{}, fmt.Errorf("api server %s: %w", v.Host, err)
	}
	resp.Body.Close()
	t, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return time.Time{}, fmt.Errorf("api server %s sent no clock (Date %q): %w", v.Host, resp.Header.Get("Date"), err)
	}
	return t, nil
}
