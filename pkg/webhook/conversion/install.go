package conversion

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CRDs are the CRDs this webhook converts, with the path it serves each on.
var CRDs = map[string]string{
	"nodepools.karpenter.sh":           "/conversion/karpenter.sh",
	"nodeclaims.karpenter.sh":          "/conversion/karpenter.sh",
	"ec2nodeclasses.karpenter.k8s.aws": "/conversion/karpenter.k8s.aws",
}

// ClientConfig tells the apiserver how to reach the webhook: either a
// Service (in-cluster) or a URL base (e.g. https://127.0.0.1:8443 in tests).
type ClientConfig struct {
	Service *apiextensionsv1.ServiceReference
	URL     string
}

func (c ClientConfig) forPath(path string, caBundle []byte) *apiextensionsv1.WebhookClientConfig {
	out := &apiextensionsv1.WebhookClientConfig{CABundle: caBundle}
	if c.Service != nil {
		svc := *c.Service
		svc.Path = &path
		out.Service = &svc
	} else {
		u := c.URL + path
		out.URL = &u
	}
	return out
}

// EnableConversion points every CRD of CRDs that exists in the cluster at the
// webhook, writes the CA bundle, and serves every version. CRDs not
// installed (e.g. EC2NodeClass on the KWOK provider) are skipped.
func EnableConversion(ctx context.Context, c client.Client, cc ClientConfig, caBundle []byte) error {
	for name, path := range CRDs {
		err := updateCRD(ctx, c, name, func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             cc.forPath(path, caBundle),
					ConversionReviewVersions: []string{"v1"},
				},
			}
			for i := range crd.Spec.Versions {
				crd.Spec.Versions[i].Served = true
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// DisableConversion returns the CRDs to v1 only: the non-storage versions are
// no longer served and no webhook is called. Stored objects are v1 already.
func DisableConversion(ctx context.Context, c client.Client) error {
	for name := range CRDs {
		err := updateCRD(ctx, c, name, func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
			for i := range crd.Spec.Versions {
				crd.Spec.Versions[i].Served = crd.Spec.Versions[i].Storage
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func updateCRD(ctx context.Context, c client.Client, name string, mutate func(*apiextensionsv1.CustomResourceDefinition)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			if client.IgnoreNotFound(err) == nil {
				return nil
			}
			return fmt.Errorf("reading CRD %s: %w", name, err)
		}
		mutate(crd)
		if err := c.Update(ctx, crd); err != nil {
			return fmt.Errorf("updating CRD %s: %w", name, err)
		}
		return nil
	})
}
