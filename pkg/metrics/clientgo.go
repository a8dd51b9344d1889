package metrics

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// client-go's request metrics under upstream's names and labels
// (client_go_request_duration_seconds by verb, group, version, kind and
// subresource; client_go_request_total by code and method), fed by client-go's
// metric hooks.
var (
	clientRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "client_go_request_duration_seconds",
		Help:    "Request latency in seconds. Broken down by verb, group, version, kind, and subresource.",
		Buckets: prometheus.ExponentialBuckets(0.001, 1.5, 20),
	}, []string{"verb", "group", "version", "kind", "subresource"})
	clientRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "client_go_request_total",
		Help: "Number of HTTP requests, partitioned by status code and method.",
	}, []string{"code", "method"})

	registerClientOnce sync.Once
)

// RegisterClientMetrics registers the two families with reg and points
// client-go's latency and result hooks at them. client-go keeps one hook of
// each for the process, so this replaces controller-runtime's (whose
// rest_client_requests_total upstream does not export either); it is done once.
func RegisterClientMetrics(reg prometheus.Registerer) {
	registerClientOnce.Do(func() {
		reg.MustRegister(clientRequestDuration, clientRequests)
		clientmetrics.RequestLatency = clientLatency{}
		clientmetrics.RequestResult = clientResult{}
	})
}

type clientResult struct{}

func (clientResult) Increment(_ context.Context, code, method, _ string) {
	clientRequests.WithLabelValues(code, method).Inc()
}

type clientLatency struct{}

func (clientLatency) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	r, ok := parseRequestPath(u.Path)
	if !ok {
		return
	}
	clientRequestDuration.WithLabelValues(requestVerb(verb, r.named), r.group, r.version, r.resource, r.subresource).Observe(latency.Seconds())
}

// requestPath is what a client-go request path says: group ("" for the core
// group), version, the resource (plural), and the subresource when there is
// one. client-go hands the hooks paths with placeholders such as {namespace}
// and {name}.
type requestPath struct {
	group, version, resource, subresource string
	named                                 bool
}

// parseRequestPath reads /api/v1[/namespaces/{ns}]/<resource>[/{name}[/<sub>]]
// and /apis/<group>/<version>/... ; anything else (discovery, /healthz) is not
// an API resource request.
func parseRequestPath(path string) (requestPath, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var r requestPath
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		r.version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		r.group, r.version, parts = parts[1], parts[2], parts[3:]
	default:
		return r, false
	}
	// A namespaced resource; "namespaces" alone (or with a name) is the resource itself.
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	r.resource = parts[0]
	if len(parts) >= 2 {
		r.named = true
	}
	if len(parts) >= 3 {
		r.subresource = parts[2]
	}
	return r, true
}

// requestVerb names the action as upstream's metric does: a POST creates, a
// GET without a name lists, a PUT without a name creates and with one updates.
func requestVerb(method string, named bool) string {
	switch method {
	case "POST":
		return "CREATE"
	case "GET":
		if !named {
			return "LIST"
		}
	case "PUT":
		if !named {
			return "CREATE"
		}
		return "UPDATE"
	}
	return method
}
