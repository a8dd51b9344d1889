package conditions

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// kindless holds the families upstream's status controllers write for every
// kind at once, labelled by group and kind instead of the kind's extra labels:
// operator_status_condition_{count,current_status_seconds,transitions_total,
// transition_seconds} and operator_termination_{current_time_seconds,
// duration_seconds}. One set per registry, shared by the kinds' controllers.
type kindless struct {
	count                                  *prometheus.GaugeVec
	transitions                            *prometheus.CounterVec
	transitionSeconds, terminationDuration *prometheus.HistogramVec
	currentSeconds, terminationCurrent     *prometheus.Desc

	mu      sync.Mutex
	members []*Controller
}

var (
	kindlessMu  sync.Mutex
	kindlessSet = map[prometheus.Registerer]*kindless{}
)

var (
	kindlessCurrentLabels     = []string{LabelNamespace, LabelName, LabelType, LabelStatus, LabelReason, LabelGroup, LabelKind}
	kindlessTerminationLabels = []string{LabelNamespace, LabelName, LabelGroup, LabelKind}
)

// kindlessFor returns reg's kind-less families, creating and registering them
// on first use.
func kindlessFor(reg prometheus.Registerer) (*kindless, error) {
	kindlessMu.Lock()
	defer kindlessMu.Unlock()
	if k, ok := kindlessSet[reg]; ok {
		return k, nil
	}
	k := &kindless{
		count: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "operator", Subsystem: "status_condition", Name: "count",
			Help: "Number of conditions of an object with a given type, status and reason (1 per present condition), labelled by the object's group and kind.",
		}, kindlessCurrentLabels),
		currentSeconds: prometheus.NewDesc("operator_status_condition_current_status_seconds",
			"Seconds an object's condition has held its current status, from its lastTransitionTime, labelled by the object's group and kind.", kindlessCurrentLabels, nil),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "operator", Subsystem: "status_condition", Name: "transitions_total",
			Help: "Observed condition transitions, labelled with the type, status and reason transitioned to and the object's group and kind.",
		}, []string{LabelType, LabelStatus, LabelReason, LabelGroup, LabelKind}),
		transitionSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "operator", Subsystem: "status_condition", Name: "transition_seconds",
			Help:    "Seconds a condition held the status it left (status) before an observed transition to another (to_status), labelled by the object's group and kind.",
			Buckets: prometheus.DefBuckets,
		}, []string{LabelType, LabelStatus, LabelToStatus, LabelGroup, LabelKind}),
		terminationCurrent: prometheus.NewDesc("operator_termination_current_time_seconds",
			"Seconds an object has been terminating, since its deletionTimestamp, labelled by the object's group and kind.", kindlessTerminationLabels, nil),
		terminationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "operator", Subsystem: "termination", Name: "duration_seconds",
			Help:    "Seconds from an object's deletionTimestamp until it was seen gone, labelled by the object's group and kind.",
			Buckets: prometheus.DefBuckets,
		}, []string{LabelGroup, LabelKind}),
	}
	for _, m := range []prometheus.Collector{k.count, kindlessAges{k}, k.transitions, k.transitionSeconds, k.terminationDuration} {
		if err := reg.Register(m); err != nil {
			return nil, fmt.Errorf("registering status metrics: %w", err)
		}
	}
	kindlessSet[reg] = k
	return k, nil
}

func (k *kindless) add(c *Controller) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.members = append(k.members, c)
}

// kindlessAges exports the kind-less age gauges of every member's objects at
// scrape time, as ageCollector does per kind.
type kindlessAges struct{ k *kindless }

func (a kindlessAges) Describe(ch chan<- *prometheus.Desc) {
	ch <- a.k.currentSeconds
	ch <- a.k.terminationCurrent
}

func (a kindlessAges) Collect(ch chan<- prometheus.Metric) {
	a.k.mu.Lock()
	members := append([]*Controller(nil), a.k.members...)
	a.k.mu.Unlock()
	for _, c := range members {
		c.mu.Lock()
		now := c.clock.Now()
		for key, o := range c.seen {
			for i, series := range o.gauges {
				ch <- prometheus.MustNewConstMetric(a.k.currentSeconds, prometheus.GaugeValue, now.Sub(o.since[i]).Seconds(),
					values(c.kindlessLabels(series, LabelNamespace, LabelName, LabelType, LabelStatus, LabelReason), kindlessCurrentLabels)...)
			}
			if o.deletedAt != nil {
				ch <- prometheus.MustNewConstMetric(a.k.terminationCurrent, prometheus.GaugeValue, now.Sub(o.deletedAt.Time).Seconds(),
					key.Namespace, key.Name, c.kind.Group, c.kind.KindName)
			}
		}
		c.mu.Unlock()
	}
}
