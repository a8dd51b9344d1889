package launchtemplate

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// userDataBytes is upstream's karpenter_ec2nodeclasses_userdata_bytes: the
// size of the user data last rendered for a class's launch template (raw,
// before base64; EC2 limits it to 16 KiB), set on each launch template
// creation and dropped with the class's launch templates.
var userDataBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: "karpenter", Subsystem: "ec2nodeclasses", Name: "userdata_bytes",
	Help: "Size in bytes of the rendered user data (raw, pre-base64) for the EC2NodeClass",
}, []string{"nodeclass"})

func init() { crmetrics.Registry.MustRegister(userDataBytes) }
