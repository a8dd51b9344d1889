package legacy

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
)

// Enabled reports whether the legacy controllers can run: the cluster
// serves karpenter.sh/v1alpha5 Machines (a cluster that never ran v0.31, or
// whose old CRDs were removed, does not) and this process may watch and
// update Machines and read Provisioners. When not, why says so, for the log.
func Enabled(ctx context.Context, mapper meta.RESTMapper, kube client.Client) (ok bool, why string, err error) {
	for _, kind := range []string{"Machine", "Provisioner"} {
		if _, err := mapper.RESTMapping(v1alpha5.SchemeGroupVersion.WithKind(kind).GroupKind(), v1alpha5.SchemeGroupVersion.Version); err != nil {
			if meta.IsNoMatchError(err) {
				return false, fmt.Sprintf("the cluster serves no karpenter.sh/v1alpha5 %s", kind), nil
			}
			return false, "", err
		}
	}
	checks := []struct{ resource, verb string }{
		{"machines", "watch"}, {"machines", "patch"}, {"machines", "delete"}, {"machines/status", "patch"}, {"provisioners", "watch"},
	}
	for _, c := range checks {
		res, sub, _ := cutSlash(c.resource)
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: v1alpha5.SchemeGroupVersion.Group, Resource: res, Subresource: sub, Verb: c.verb},
		}}
		if err := kube.Create(ctx, review); err != nil {
			return false, "", fmt.Errorf("checking access to %s: %w", c.resource, err)
		}
		if !review.Status.Allowed {
			return false, fmt.Sprintf("this service account may not %s karpenter.sh %s (add the rule to the controller's ClusterRole)", c.verb, c.resource), nil
		}
	}
	return true, "", nil
}

func cutSlash(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
