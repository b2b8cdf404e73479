package recovery

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/pkg/catalog"
)

// servesAfter serves its resource from the n-th question on.
type servesAfter struct {
	n     int
	asked []catalog.Resource
}

func (s *servesAfter) Serves(_ context.Context, r catalog.Resource) error {
	s.asked = append(s.asked, r)
	if len(s.asked) < s.n {
		return errors.New("the server could not find the requested resource\nmore detail")
	}
	return nil
}

// TestWaitServed: WaitServed asks for the CRD's resource at its storage
// version until it is served, and gives up after the wait, saying the
// first line of the last answer.
func TestWaitServed(t *testing.T) {
	crd := &Object{Key: "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com", Obj: &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1"}, {Name: "v1", Storage: true}}}}}
	ctx := context.Background()
	api := &servesAfter{n: 2}
	if err := WaitServed(ctx, api, crd, 10*time.Second); err != nil {
		t.Fatalf("served at the second question: %v", err)
	}
	if r := api.asked[0]; len(api.asked) != 2 || r.Group != "example.com" || r.Resource != "widgets" || r.Version != "v1" || !r.Namespaced {
		t.Errorf("asked %+v, want widgets.example.com/v1 twice", api.asked)
	}
	err := WaitServed(ctx, &servesAfter{n: 1000}, crd, 600*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "widgets.example.com not served after 600ms") || strings.Contains(err.Error(), "more detail") {
		t.Errorf("never served: %v", err)
	}
}
