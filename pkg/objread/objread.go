// Package objread reads the content of a stored object for every decision
// that needs its fields (what a deletion sets in motion, when an object was
// created, what holds a deletion back). It reads the value as stored, then
// decrypted with the local encryption config, then through the API server;
// when none of them can, it says why, and the decision that needed it is
// unknown: regghost refuses rather than decide blind.
package objread

import (
	"context"
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/resolve"
)

// APIReader reads a whole object through the API server (*apiview.View),
// which holds the encryption keys regghost may lack.
type APIReader interface {
	Object(ctx context.Context, r catalog.Resource, namespace, name string) (*unstructured.Unstructured, error)
}

// Reader reads stored values. Every field but Registry may be nil.
type Reader struct {
	// Registry is the registry prefix ("/registry/").
	Registry string
	// Types names the resource stored under each prefix, for the
	// encryption provider and the API read; the release catalog alone when nil.
	Types *resolve.Resolver
	// Decrypter is --encryption-provider-config.
	Decrypter resolve.Decrypter
	// API is the API server.
	API APIReader
}

// Unreadable is the error of a value nobody here could read.
type Unreadable struct {
	Key string
	// Why says what each way of reading it answered.
	Why string
}

func (e *Unreadable) Error() string { return e.Key + " cannot be read here: " + e.Why }

// IsUnreadable reports whether err says a value could not be read.
func IsUnreadable(err error) bool {
	var u *Unreadable
	return errors.As(err, &u)
}

// Read decodes the value stored under key into a typed object (or an
// unstructured one for custom resources). A value encrypted at rest is
// decrypted with the local configuration, or else read through the API
// server. An error is always an *Unreadable saying why each way failed.
func (r *Reader) Read(ctx context.Context, key string, value []byte) (runtime.Object, error) {
	obj, meta, err := decode.Typed(value)
	if err == nil {
		return obj, nil
	}
	why := []string{err.Error()}
	k, perr := etcdscan.ParseKey(r.Registry, key)
	if perr != nil {
		return nil, &Unreadable{Key: key, Why: strings.Join(append(why, perr.Error()), "; ")}
	}
	res := r.resource(k.Prefix)
	if meta != nil && meta.Encryption != nil {
		if r.Decrypter == nil {
			why = append(why, "no --encryption-provider-config")
		} else if plain, derr := r.Decrypter.Decrypt(ctx, key, schema.GroupResource{Group: res.Group, Resource: res.Resource}, value); derr != nil {
			why = append(why, derr.Error())
		} else if obj, _, err = decode.Typed(plain); err == nil {
			return obj, nil
		} else {
			why = append(why, "decrypted: "+err.Error())
		}
	}
	switch {
	case r.API == nil:
		why = append(why, "the API server is not asked")
	case res.Version == "":
		why = append(why, "the API server serves nothing under "+k.Prefix+"/")
	default:
		u, aerr := r.API.Object(ctx, res, k.Namespace, k.Name)
		if aerr == nil {
			if obj, err := decode.FromUnstructured(u); err == nil {
				return obj, nil
			}
			return u, nil
		}
		why = append(why, "the API server: "+firstLine(aerr.Error()))
	}
	return nil, &Unreadable{Key: key, Why: strings.Join(why, "; ")}
}

func (r *Reader) resource(prefix string) catalog.Resource {
	if r.Types != nil {
		res, _ := r.Types.Resource(prefix)
		return res
	}
	return catalog.Release().ResourceFor(prefix)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
