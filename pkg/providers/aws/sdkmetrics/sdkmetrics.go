// Package sdkmetrics exports upstream's aws_sdk_go_* families for every AWS
// API call Karpenter makes, labelled by service, action and code (the HTTP
// status of the response, "0" when none came): requests (an operation with all
// its retries) and their durations, attempts and their durations, and the
// retries each request took.
package sdkmetrics

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var labels = []string{"service", "action", "code"}

var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aws_sdk_go_request_total",
		Help: "The total number of AWS SDK Go requests",
	}, labels)
	requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "aws_sdk_go_request_duration_seconds",
		Help: "Latency of AWS SDK Go requests",
	}, labels)
	attempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aws_sdk_go_request_attempt_total",
		Help: "The total number of AWS SDK Go request attempts",
	}, labels)
	attemptDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "aws_sdk_go_request_attempt_duration_seconds",
		Help: "Latency of AWS SDK Go request attempts",
	}, labels)
	retries = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "aws_sdk_go_request_retry_count",
		Help:    "The total number of AWS SDK Go retry attempts per request",
		Buckets: []float64{0, 1, 2, 3, 4, 5, 10},
	}, labels)
)

func init() {
	crmetrics.Registry.MustRegister(requests, requestDuration, attempts, attemptDuration, retries)
}

// Install adds the metrics middleware to every client built from cfg.
func Install(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, addMiddleware)
}

func addMiddleware(stack *middleware.Stack) error {
	// At the end of Initialize, after the client recorded the service and
	// operation in the context; once per operation, around all its attempts.
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("karpenter.sdkmetrics.request", request), middleware.After); err != nil {
		return err
	}
	// Deserialize runs once per attempt, inside the retry loop.
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("karpenter.sdkmetrics.attempt", attempt), middleware.After)
}

func request(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	start := time.Now()
	out, md, err := next.HandleInitialize(ctx, in)
	l := record(ctx, awsmiddleware.GetRawResponse(md), start, requests, requestDuration)
	n := 0
	if results, ok := retry.GetAttemptResults(md); ok && len(results.Results) > 0 {
		n = len(results.Results) - 1
	}
	retries.WithLabelValues(l...).Observe(float64(n))
	return out, md, err
}

func attempt(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	start := time.Now()
	out, md, err := next.HandleDeserialize(ctx, in)
	record(ctx, out.RawResponse, start, attempts, attemptDuration)
	return out, md, err
}

// record counts a request or an attempt that started at start and got raw
// (nil when no response came) and returns its labels: service, action, code.
func record(ctx context.Context, raw any, start time.Time, count *prometheus.CounterVec, duration *prometheus.HistogramVec) []string {
	code := "0"
	if r, ok := raw.(*smithyhttp.Response); ok && r != nil {
		code = strconv.Itoa(r.StatusCode)
	}
	l := []string{awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx), code}
	count.WithLabelValues(l...).Inc()
	duration.WithLabelValues(l...).Observe(time.Since(start).Seconds())
	return l
}
