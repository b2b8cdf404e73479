package etcdscan

import (
	"errors"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/regghost/regghost/pkg/decode"
)

// apiKind is what an API server reply proves about a stored value.
type apiKind int

const (
	// apiRead: the API server read the object.
	apiRead apiKind = iota
	// apiNotFound: 404.
	apiNotFound
	// apiCannotTransform: the API server's own storage layer says the value
	// is not transformable with the keys it has.
	apiCannotTransform
	// apiCannotDecode: the API server's storage layer says the value does
	// not decode.
	apiCannotDecode
	// apiNoEvidence: anything else (timeouts, throttling, a KMS plugin
	// down, a failing conversion webhook, RBAC): proof of nothing.
	apiNoEvidence
)

type apiReply struct {
	kind apiKind
	said string
}

// Phrases of kube-apiserver's storage layer (k8s.io/apiserver
// pkg/storage/value and etcd3). Only these make a 500 evidence.
var (
	// A value no configured transformer can read, whatever the plugins do.
	notTransformableWithConfiguredKeys = []string{
		"no matching prefix found",                          // no provider in the config has the value's prefix
		"identity transformer tried to read encrypted data", // the resource is not encrypted in the config at all
		"no matching key was found for the provided",        // aescbc/secretbox: the key name is not configured
		"invalid PKCS7 data",                                // aescbc with a different secret under the same name
		"the stored data was shorter than the required size",
		"cipher: message authentication failed", // aesgcm
	}
	// Failures of a KMS plugin or of the path to it: the value may be fine.
	kmsUnavailable = []string{
		"rpc error", "failed to decrypt DEK", "got unexpected nil transformer",
		"deadline exceeded", "context canceled", "connection refused", "unavailable",
	}
	// Decoding failures of the stored bytes themselves.
	notDecodable = []string{
		"object not decodable", "proto:", "unable to unmarshal", "illegal wireType", "unexpected EOF",
		"invalid character", "json parse error", "cbor:", "couldn't get version/kind",
	}
	// Failures in reading that are not about the bytes (the object is
	// recoverable: the stored version was removed, a webhook is down).
	notAboutTheBytes = []string{
		"conversion webhook", "request to convert CR", "converting (",
	}
)

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// readAnswer interprets an API server reply to a GET. enc is the value's
// encryption prefix, if any: for a KMS value only "no provider has this
// prefix" is evidence, since any other failure may be the plugin's.
func readAnswer(err error, enc *decode.Encryption) apiReply {
	if err == nil {
		return apiReply{kind: apiRead, said: "read"}
	}
	msg := oneLineErr(err)
	if apierrors.IsNotFound(err) {
		return apiReply{kind: apiNotFound, said: "404 NotFound"}
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Code != http.StatusInternalServerError {
		return apiReply{kind: apiNoEvidence, said: "no evidence: " + msg}
	}
	transform := notTransformableWithConfiguredKeys
	if enc != nil && enc.Provider == "kms" {
		// Any other failure of a KMS value may be the plugin's.
		transform = transform[:2]
	}
	switch {
	case containsAny(msg, transform) && !containsAny(msg, kmsUnavailable[:3]):
		return apiReply{kind: apiCannotTransform, said: "500 " + msg}
	case containsAny(msg, kmsUnavailable):
		return apiReply{kind: apiNoEvidence, said: "no evidence (the KMS plugin may be down or slow): 500 " + msg}
	case containsAny(msg, notAboutTheBytes):
		return apiReply{kind: apiNoEvidence, said: "no evidence (a conversion failed, not the stored bytes): 500 " + msg}
	case containsAny(msg, notDecodable):
		return apiReply{kind: apiCannotDecode, said: "500 " + msg}
	}
	return apiReply{kind: apiNoEvidence, said: "no evidence (a 500 that does not say the stored value is unreadable): " + msg}
}

func oneLineErr(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
