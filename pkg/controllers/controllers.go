// Package controllers wires every controller of the operator into its
// manager; it is the one place that does. cmd/karpenter builds the operator,
// the cluster state and the chosen cloud provider's Bundle, and calls
// Register. The packages below hold the controllers themselves:
// provisioning (pods to NodeClaims), nodeclaim/* (a NodeClaim's life),
// node/termination (draining deleted Nodes), nodepool (NodePool status and
// hash), disrupter (disruption passes and the orchestration queue), legacy
// (the v1alpha5 Machines of an upstream v0.31 install, until migrated) and
// metrics/* (cluster state, pod and status-condition metrics).
package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/karpenter-go/karpenter/pkg/capacitybuffer"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/instrumented"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider/overlay"
	buffercontroller "github.com/karpenter-go/karpenter/pkg/controllers/capacitybuffer"
	"github.com/karpenter-go/karpenter/pkg/controllers/deletioncost"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter"
	"github.com/karpenter-go/karpenter/pkg/controllers/disrupter/orchestration"
	"github.com/karpenter-go/karpenter/pkg/controllers/internal/podindex"
	"github.com/karpenter-go/karpenter/pkg/controllers/legacy"
	"github.com/karpenter-go/karpenter/pkg/controllers/metrics/conditions"
	nodemetrics "github.com/karpenter-go/karpenter/pkg/controllers/metrics/node"
	"github.com/karpenter-go/karpenter/pkg/controllers/metrics/nodepoolcost"
	podmetrics "github.com/karpenter-go/karpenter/pkg/controllers/metrics/pod"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/legacyrepair"
	"github.com/karpenter-go/karpenter/pkg/controllers/node/termination"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/candidacy"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/consistency"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/expiration"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/podevents"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/reboot"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeoverlay"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodepool"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	"github.com/karpenter-go/karpenter/pkg/controllers/staticcapacity"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/operator"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
	"github.com/karpenter-go/karpenter/pkg/state/informer"
)

// Deps are what the controllers share.
type Deps struct {
	KubeClient client.Client
	Clock      clock.Clock
	Recorder   record.EventRecorder
	Options    *options.Options
	// Cluster is the in-memory cluster state; Register adds the informers
	// that feed it.
	Cluster *state.Cluster
	// Bundle is the chosen cloud provider's (pkg/providers).
	Bundle *cloudprovider.Bundle
}

// Register adds every controller to mgr: the provider's own, the cluster
// state informers, provisioning, the metrics controllers (unless
// DISABLE_CLUSTER_STATE_OBSERVABILITY), the NodeClaim and Node lifecycle, the
// NodePool controllers and disruption. The core's controllers reach the
// provider through the metrics decorator, so its calls are measured.
func Register(ctx context.Context, mgr manager.Manager, d Deps) error {
	cp := instrumented.Decorate(d.Bundle.CloudProvider)
	// priced is what provisioning, disruption and the cost metric read
	// instance types through: with the NodeOverlay gate, as the overlays
	// change them. The overlay controller evaluates against cp.
	priced, unmeasured, overlays := cp, d.Bundle.CloudProvider, (*nodeoverlay.Controller)(nil)
	if d.Options.FeatureGate(options.FeatureNodeOverlay) {
		store := overlay.NewStore()
		priced, unmeasured = overlay.Decorate(cp, store), overlay.Decorate(d.Bundle.CloudProvider, store)
		// A provider that resolves instance types in Create launches among
		// them as overlaid too.
		if aware, ok := d.Bundle.CloudProvider.(cloudprovider.OverlayAware); ok {
			aware.SetInstanceTypeOverlay(store)
		}
		overlays = nodeoverlay.NewController(d.KubeClient, cp, store, d.Bundle.WellKnownLabels...)
	}
	all := append([]cloudprovider.Controller(nil), d.Bundle.Controllers...)
	all = append(all, StateInformers(d.KubeClient, d.Cluster)...)

	creates, err := ownConnectionClient(mgr)
	if err != nil {
		return err
	}
	// CapacityBuffers: resolved by their controller, placed by the provisioner.
	var buffers *capacitybuffer.Store
	if d.Options.FeatureGate(options.FeatureCapacityBuffer) {
		buffers = capacitybuffer.NewStore()
	}
	prov := provisioning.NewProvisioner(d.KubeClient, priced, d.Cluster, d.Recorder, d.Clock, provisioning.Options{
		CreateClient:      creates,
		BatchIdleDuration: d.Options.BatchIdleDuration,
		BatchMaxDuration:  d.Options.BatchMaxDuration,
		PreferencePolicy:  d.Options.PreferencePolicy,
		MinValuesPolicy:   d.Options.MinValuesPolicy,
		// kube-scheduler's default topology spread (SCHEDULER_CONFIG), for
		// provisioning and disruption alike.
		DefaultTopologySpread: d.Options.SchedulerConfig.DefaultTopologySpreadConstraints(),
		SimulateDRARequests:   !d.Options.IgnoreDRARequests,
		StaticCapacity:        d.Options.FeatureGate(options.FeatureStaticCapacity),
		Buffers:               buffers,
	})
	if defaults := d.Options.SchedulerConfig.DefaultTopologySpreadConstraints(); len(defaults) > 0 {
		mgr.GetLogger().Info("scheduler-config is set: pods that declare no topology spread constraints are simulated with these defaults", "default-topology-spread-constraints", defaults)
	}
	all = append(all, cloudprovider.Runnable(prov), cloudprovider.ControllerFunc(func(ctx context.Context, mgr manager.Manager) error {
		// Decisions list the unbound pods through the index (see podindex).
		if err := podindex.Register(ctx, mgr.GetFieldIndexer()); err != nil {
			// Decisions still work, filtering a full list (see podindex.OnNode).
			mgr.GetLogger().Info("pod index not added", "field", podindex.NodeName, "error", err.Error())
		}
		return provisioning.NewPodTrigger(d.KubeClient, prov.Batcher()).Register(mgr, d.Options.CPUConcurrency(10, 1000))
	}), cloudprovider.Registerer(provisioning.NewDeletionTrigger(prov.Batcher()).Register))
	if overlays != nil {
		// NodePools skipped while unevaluated may launch now.
		overlays.OnUpdate = func() { prov.Trigger(types.UID("nodeoverlay")) }
		all = append(all, overlays)
	}
	if !d.Options.DisableClusterStateObservability {
		metrics, err := observability(d, unmeasured)
		if err != nil {
			return err
		}
		all = append(all, metrics...)
	}
	all = append(all, NodeLifecycle(d.KubeClient, cp, d.Clock, d.Recorder)...)
	static := d.Options.FeatureGate(options.FeatureStaticCapacity)
	all = append(all, NodePools(d.KubeClient, cp, d.Clock, static)...)
	if static {
		all = append(all, cloudprovider.Registerer(staticcapacity.NewController(d.KubeClient, d.Cluster, prov, d.Clock).Register))
	}
	if buffers != nil {
		all = append(all, cloudprovider.ControllerFunc(buffercontroller.NewController(d.KubeClient, buffers, prov.Trigger).Register))
	}
	// Machines of an upstream v0.31 install, until they are migrated.
	all = append(all, legacy.Controllers(d.KubeClient, cp, prov, d.Cluster, d.Clock, d.Recorder)...)

	// The disruption controller decides; the orchestration queue carries its
	// commands out.
	queue := orchestration.NewQueue(d.KubeClient, d.Cluster, d.Recorder, d.Clock)
	spotToSpot := d.Options.FeatureGate(options.FeatureSpotToSpotConsolidation)
	deletionCost := d.Options.FeatureGate(options.FeaturePodDeletionCostManagement)
	// Node repair is a disruption method, as upstream's; --legacy-node-repair
	// asks for upstream's older controller (node.health) instead.
	repair := d.Options.FeatureGate(options.FeatureNodeRepair) && !d.Options.LegacyNodeRepair
	if repair {
		if err := disruption.ValidateRepairPolicies(priced.RepairPolicies()); err != nil {
			return fmt.Errorf("node repair needs valid repair policies from the %s cloud provider: %w", priced.Name(), err)
		}
	}
	if d.Options.FeatureGate(options.FeatureNodeRepair) && d.Options.LegacyNodeRepair && len(priced.RepairPolicies()) > 0 {
		legacyRepair, err := legacyrepair.NewController(d.KubeClient, priced, d.Clock, d.Recorder)
		if err != nil {
			return fmt.Errorf("legacy node repair needs valid repair policies from the %s cloud provider: %w", priced.Name(), err)
		}
		all = append(all, legacyRepair)
	}
	all = append(all, cloudprovider.Registerer(queue.Register), cloudprovider.Runnable(disrupter.NewController(d.KubeClient, d.Cluster, prov, priced, queue, d.Recorder, d.Clock, disrupter.Options{
		SpotToSpotConsolidation:    spotToSpot,
		PodDeletionCostManagement:  deletionCost,
		TerminateFirstDrift:        d.Options.FeatureGate(options.FeatureTerminateFirstDrift),
		TerminateFirstRepair:       d.Options.FeatureGate(options.FeatureTerminateFirstRepair),
		NodeRepair:                 repair,
		DisableRepackConsolidation: d.Options.DisableRepackConsolidation,
	})))
	if deletionCost {
		// pod-deletion-cost from the same input as a disruption pass.
		cache := scheduling.NewCache()
		input := func(ctx context.Context) (*disruption.Input, error) {
			in, _, err := disrupter.BuildInput(ctx, disrupter.InputSources{
				Kube: d.KubeClient, Cluster: d.Cluster, Provisioner: prov, CloudProvider: priced, InQueue: queue.Has, Cache: cache, Now: d.Clock.Now(),
				Options: disruption.Options{SpotToSpotConsolidation: spotToSpot, PodDeletionCostManagement: true},
			})
			return in, err
		}
		all = append(all, cloudprovider.Runnable(deletioncost.NewController(d.KubeClient, d.Cluster, input, d.Clock)))
	}

	if err := RegisterEach(ctx, mgr, all...); err != nil {
		return err
	}
	// Decide once right after start-up (or winning leadership): pods that went
	// pending while no controller ran would otherwise wait for their re-trigger.
	prov.Trigger(types.UID("startup"))
	return nil
}

// RegisterEach registers cs with mgr in order, stopping at the first error.
func RegisterEach(ctx context.Context, mgr manager.Manager, cs ...cloudprovider.Controller) error {
	for _, c := range cs {
		if err := c.Register(ctx, mgr); err != nil {
			return err
		}
	}
	return nil
}

// StateInformers feed the cluster state from Nodes, NodeClaims, pods,
// DaemonSets and NodePools.
func StateInformers(kube client.Reader, cluster *state.Cluster) []cloudprovider.Controller {
	var out []cloudprovider.Controller
	for _, c := range informer.All(kube, cluster) {
		out = append(out, cloudprovider.ControllerFunc(func(_ context.Context, mgr manager.Manager) error {
			if err := c.Register(mgr); err != nil {
				return fmt.Errorf("registering %s: %w", c.Name(), err)
			}
			return nil
		}))
	}
	return out
}

// NodeLifecycle are the controllers that own a NodeClaim once it exists and
// the Node behind it: lifecycle (launch, registration, initialization,
// liveness, the NodeClaim finalizer), Node termination (drain, with its
// eviction queue), pod events, the Consolidatable and Drifted conditions,
// expiration, and garbage collection of instances against NodeClaims. cp
// should be the decorated provider, so that their calls are measured.
func NodeLifecycle(kube client.Client, cp cloudprovider.CloudProvider, clk clock.Clock, recorder record.EventRecorder) []cloudprovider.Controller {
	term := termination.NewController(kube, cp, clk, recorder)
	return []cloudprovider.Controller{
		lifecycle.NewController(kube, cp, clk, recorder),
		term,
		// Reboots already requested run to their end whatever the gates say
		// now, as upstream's: the controller acts only on a Rebooting
		// condition that is True.
		reboot.NewController(kube, cp, term.Drainer, clk, recorder),
		podevents.NewController(kube, clk),
		cloudprovider.Registerer(candidacy.NewController(kube, cp, clk).Register),
		cloudprovider.Registerer(expiration.NewController(kube, clk, recorder).Register),
		cloudprovider.Registerer(garbagecollection.NewController(kube, cp, clk, recorder).Register),
		consistency.NewController(kube, cp, clk, recorder),
	}
}

// NodePools are the NodePool controllers: resource counter, NodeClassReady,
// validation and the hash annotations.
func NodePools(kube client.Client, cp cloudprovider.CloudProvider, clk clock.Clock, staticCapacity bool) []cloudprovider.Controller {
	validation := nodepool.NewValidation(kube, clk)
	validation.StaticCapacity = staticCapacity
	return []cloudprovider.Controller{
		cloudprovider.Registerer(nodepool.NewCounter(kube, clk).Register),
		cloudprovider.Registerer(nodepool.NewReadiness(kube, cp, clk).Register),
		cloudprovider.Registerer(validation.Register),
		cloudprovider.Registerer(nodepool.NewHashController(kube).Register),
	}
}

// observability: the NodePool and cluster state gauges, per-node gauges and
// cluster utilization (upstream's metrics.node), pod bound/startup latencies
// and waiting-pod gauges (metrics.pod), and operator_<kind>_status_condition_*
// and _termination_* (operatorpkg's status controllers).
// cost is the provider the NodePool cost metric prices through (overlaid
// with the NodeOverlay gate; not measured, as the metric is not a decision).
func observability(d Deps, cost cloudprovider.CloudProvider) ([]cloudprovider.Controller, error) {
	out := []cloudprovider.Controller{cloudprovider.Runnable(&provisioning.MetricsExporter{Cluster: d.Cluster, Clock: d.Clock})}
	nodeMetrics, err := nodemetrics.NewController(d.Cluster, d.Clock, crmetrics.Registry, d.Bundle.WellKnownLabels...)
	if err != nil {
		return nil, err
	}
	podMetrics, err := podmetrics.NewController(d.KubeClient, d.Clock, crmetrics.Registry, d.Cluster.PodTimes)
	if err != nil {
		return nil, err
	}
	costs, err := nodepoolcost.New(d.Cluster, cost, crmetrics.Registry)
	if err != nil {
		return nil, err
	}
	out = append(out, cloudprovider.Runnable(nodeMetrics), cloudprovider.Registerer(podMetrics.Register), cloudprovider.Runnable(costs))
	kinds := []conditions.Kind{
		conditions.NodeClaimKind(d.Bundle.NodeClassLabelKey),
		conditions.NodePoolKind(),
		conditions.NodeKind(d.Bundle.NodeClassLabelKey),
	}
	if d.Options.FeatureGate(options.FeatureCapacityBuffer) {
		kinds = append(kinds, conditions.CapacityBufferKind())
	}
	for _, nc := range d.Bundle.CloudProvider.GetSupportedNodeClasses() {
		gvk, err := apiutil.GVKForObject(nc, d.KubeClient.Scheme())
		if err != nil {
			return nil, fmt.Errorf("node class %T: %w", nc, err)
		}
		kinds = append(kinds, conditions.NodeClassKind(nc, gvk.Group, gvk.Kind))
	}
	for _, kind := range kinds {
		statusMetrics, err := conditions.NewController(d.KubeClient, d.Clock, crmetrics.Registry, kind)
		if err != nil {
			return nil, err
		}
		statusMetrics.SetRecorder(d.Recorder)
		out = append(out, cloudprovider.Registerer(statusMetrics.Register))
	}
	return out, nil
}

// ownConnectionClient is an uncached client on a TCP connection of its own to
// the API server, for the provisioner's NodeClaim creates.
//
// Why: client-go shares one HTTP/2 connection among all clients built from
// equal TLS settings, so a create was multiplexed with the informers' watch
// streams, which in a 1,000-pod scale-up carry every pod's creation, binding
// and status; its response could reach Karpenter 0.4 s after the API server
// had written it (BenchmarkProvisioning1000Pods' audit split). On its own
// connection that part stayed under 0.17 s in four runs; the wait inside a
// CPU-starved API server remains (see the README's end-to-end section).
func ownConnectionClient(mgr manager.Manager) (client.Client, error) {
	if mgr.GetConfig() == nil {
		return nil, nil
	}
	cfg := rest.CopyConfig(mgr.GetConfig())
	operator.OwnConnection(cfg)
	return client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
}
