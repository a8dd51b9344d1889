package metrics

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestParseRequestPath(t *testing.T) {
	for _, tc := range []struct {
		path string
		want requestPath
		ok   bool
	}{
		{"/api/v1/pods", requestPath{version: "v1", resource: "pods"}, true},
		{"/api/v1/namespaces/{namespace}/pods/{name}", requestPath{version: "v1", resource: "pods", named: true}, true},
		{"/api/v1/namespaces/{namespace}/pods/{name}/eviction", requestPath{version: "v1", resource: "pods", subresource: "eviction", named: true}, true},
		{"/api/v1/namespaces/{name}", requestPath{version: "v1", resource: "namespaces", named: true}, true},
		{"/apis/karpenter.sh/v1/nodeclaims/{name}/status", requestPath{group: "karpenter.sh", version: "v1", resource: "nodeclaims", subresource: "status", named: true}, true},
		{"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", requestPath{group: "coordination.k8s.io", version: "v1", resource: "leases"}, true},
		{"/healthz", requestPath{}, false},
		{"/apis/karpenter.sh", requestPath{}, false},
	} {
		got, ok := parseRequestPath(tc.path)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

// The hooks feed upstream's families: a GET of a list is a LIST, a PUT of a
// named object an UPDATE; results count by code and method.
func TestClientHooksFeedUpstreamsFamilies(t *testing.T) {
	before := testutil.CollectAndCount(clientRequestDuration)
	clientLatency{}.Observe(context.Background(), "GET", url.URL{Path: "/apis/karpenter.sh/v1/nodepools"}, 20*time.Millisecond)
	clientLatency{}.Observe(context.Background(), "PUT", url.URL{Path: "/apis/karpenter.sh/v1/nodepools/{name}/status"}, 20*time.Millisecond)
	if n := testutil.CollectAndCount(clientRequestDuration); n != before+2 {
		t.Fatalf("%d series, want %d", n, before+2)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(clientRequestDuration)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]uint64{}
	for _, m := range families[0].GetMetric() {
		key := ""
		for _, l := range m.GetLabel() {
			key += l.GetName() + "=" + l.GetValue() + ","
		}
		seen[key] = m.GetHistogram().GetSampleCount()
	}
	for _, want := range []string{
		"group=karpenter.sh,kind=nodepools,subresource=,verb=LIST,version=v1,",
		"group=karpenter.sh,kind=nodepools,subresource=status,verb=UPDATE,version=v1,",
	} {
		if seen[want] != 1 {
			t.Errorf("no single observation labelled %s in %v", want, seen)
		}
	}
	clientResult{}.Increment(context.Background(), "200", "GET", "host")
	if got := testutil.ToFloat64(clientRequests.WithLabelValues("200", "GET")); got != 1 {
		t.Errorf("client_go_request_total{code=200,method=GET} %v, want 1", got)
	}
}
