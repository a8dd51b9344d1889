package kubeflags

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// withNegotiatedSerializer gives a bare rest.Config what UnversionedRESTClientFor
// needs to decode /version (plain JSON).
func withNegotiatedSerializer(c *rest.Config) *rest.Config {
	if c.NegotiatedSerializer == nil {
		c.NegotiatedSerializer = serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
	}
	return c
}
