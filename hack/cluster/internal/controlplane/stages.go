package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

// podDeleteAfterGrace replaces KWOK's fast pod-delete stage, which removes a
// terminating pod at once whatever its grace period. Here a pod goes when its
// deletionTimestamp (deletion time + terminationGracePeriodSeconds) is
// reached, as a container whose preStop hook or shutdown takes the whole
// grace period would: drains of such pods really wait. A pod deleted with
// grace 0 is removed by the API server itself and never reaches this stage.
const podDeleteAfterGrace = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.deletionTimestamp'
  next:
    delete: true
`

// podDeleteAtOnce is the pod-delete stage of upstream Karpenter's KWOK
// end-to-end clusters (its hack/kwok/stages): a terminating pod goes at once,
// unless its pod-delete.stage.kwok.x-k8s.io/delay annotation asks for a delay.
const podDeleteAtOnce = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
  delay:
    durationFrom:
      expressionFrom: '.metadata.annotations["pod-delete.stage.kwok.x-k8s.io/delay"]'
  next:
    delete: true
    finalizers:
      empty: true
    statusSubresource: status
  weight: 100
`

// Upstream Karpenter's end-to-end clusters let a test make a node or a pod
// unhealthy by labelling it kwok.x-k8s.io/stage=unhealthy (its node repair
// specs set a node's Ready condition to False or Unknown that way). These two
// stages give such objects precedence (weight 100) over KWOK's own:
//   - a labelled node matches a stage that does nothing, so KWOK's node
//     stages never rewrite the conditions the test wrote;
//   - a labelled pod not yet given an IP is reported running with its
//     containers but not Ready, as a pod failing its readiness probe.
const (
	nodeUnhealthyHold = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-unhealthy
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchLabels:
      kwok.x-k8s.io/stage: unhealthy
  weight: 100
  next: {}
`
	podUnhealthy = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-unhealthy
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchLabels:
      kwok.x-k8s.io/stage: unhealthy
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
    - key: .status.podIP
      operator: DoesNotExist
  weight: 100
  next:
    statusSubresource: status
    statusTemplate: |
      {{ $at := Now | Quote }}
      phase: Unknown
      startTime: {{ $at }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      conditions:
      - {type: Initialized, status: "True", lastTransitionTime: {{ $at }}}
      - {type: ContainersReady, status: "True", lastTransitionTime: {{ $at }}}
      - {type: Ready, status: "False", lastTransitionTime: {{ $at }}}
      {{ range .spec.readinessGates }}
      - {type: {{ .conditionType | Quote }}, status: "True", lastTransitionTime: {{ $at }}}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - {name: {{ .name | Quote }}, image: {{ .image | Quote }}, ready: true, restartCount: 0, state: {running: {startedAt: {{ $at }}}}}
      {{ end }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      - {name: {{ .name | Quote }}, image: {{ .image | Quote }}, ready: true, restartCount: 0, state: {terminated: {exitCode: 0, reason: Completed, startedAt: {{ $at }}, finishedAt: {{ $at }}}}}
      {{ end }}
`
)

// kwokOptions raises KWOK's workers from 4 to 16 per kind of stage: with 4, the
// pods of a 1,000-pod scale-up became Running up to 15 s after they were bound.
// KWOK's own client has no rate limit.
const kwokOptions = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: 16
  nodePlayStageParallelism: 16
  nodeLeaseParallelism: 8
`

// KWOK's heartbeat stage rewrites every node's status conditions every 600 to
// 610 s (its jitter is the delay's upper bound): at 1,000 nodes about 1.7 node
// status patches a second, 5 at 3,000, for nothing the fleet reads.
const (
	heartbeatDelay  = "durationMilliseconds: 600000"
	heartbeatJitter = "jitterDurationMilliseconds: 610000"
)

// nodeHeartbeat is KWOK's heartbeat stage. With Leases longer than its period
// (leaseSeconds > 600) the heartbeat comes once a Lease duration (up to a 60th
// more): kube-controller-manager judges a node's health by whichever of
// its Lease renewal (every quarter of the duration) and its status heartbeat
// is newer, so a status heartbeat that often is not needed to keep it Ready.
func nodeHeartbeat(leaseSeconds int) string {
	stage := nodeheartbeat.DefaultNodeHeartbeatWithLease
	if leaseSeconds <= 600 {
		return stage
	}
	ms := 1000 * leaseSeconds
	stage = strings.Replace(stage, heartbeatDelay, fmt.Sprintf("durationMilliseconds: %d", ms), 1)
	return strings.Replace(stage, heartbeatJitter, fmt.Sprintf("jitterDurationMilliseconds: %d", ms+ms/60), 1)
}

// writeKWOKStages writes KWOK's configuration and the lifecycle stages it
// runs: its own fast node and pod stages, with pod deletion that honours the
// grace period (or, with deleteAtOnce, upstream's end-to-end clusters' stage),
// the unhealthy node and pod stages of upstream's end-to-end clusters, and
// node heartbeats no more frequent than the node Leases' duration
// (leaseSeconds, 0 for the kubelet's 40 s).
func writeKWOKStages(stateDir string, leaseSeconds int, deleteAtOnce bool) (string, error) {
	podDelete := podDeleteAfterGrace
	if deleteAtOnce {
		podDelete = podDeleteAtOnce
	}
	docs := []string{
		kwokOptions,
		nodefast.DefaultNodeInit,
		nodeHeartbeat(leaseSeconds),
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podDelete,
		nodeUnhealthyHold,
		podUnhealthy,
	}
	path, err := filepath.Abs(filepath.Join(stateDir, "kwok-stages.yaml"))
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o644)
}
