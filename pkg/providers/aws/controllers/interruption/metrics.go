package interruption

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/karpenter-go/karpenter/pkg/metrics"
)

// LabelMessageType is the message kind (messages.Kind), or MessageTypeUnparsable.
const LabelMessageType = "message_type"

// LabelCategory is the status check category of an unhealthy instance
// (InstanceStatus, SystemStatus, EventStatus).
const LabelCategory = "category"

// MessageTypeUnparsable labels received messages that are not events Parse
// understands (upstream leaves them out of the count).
const MessageTypeUnparsable = "unparsable"

// Upstream's names.
var (
	ReceivedMessages = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "interruption", Name: "received_messages_total",
		Help: "Count of messages received from the SQS queue. Broken down by message type.",
	}, []string{LabelMessageType})
	DeletedMessages = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "interruption", Name: "deleted_messages_total",
		Help: "Count of messages deleted from the SQS queue.",
	})
	// InstanceStatusUnhealthy counts an instance once per category while EC2
	// keeps reporting it unhealthy (again after it recovered).
	InstanceStatusUnhealthy = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "interruption", Name: "instance_status_unhealthy_total",
		Help: "Unhealthy EC2 instances seen through DescribeInstanceStatus, each counted once per status check category until it recovers.",
	}, []string{LabelCategory})
	MessageQueueDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "interruption", Name: "message_queue_duration_seconds",
		Help:    "Amount of time an interruption message is on the queue before it is processed by karpenter.",
		Buckets: metrics.DurationBuckets(),
	})
)

func init() {
	crmetrics.Registry.MustRegister(ReceivedMessages, DeletedMessages, MessageQueueDuration, InstanceStatusUnhealthy)
}
