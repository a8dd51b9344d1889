package controlplane

import (
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

// writeKWOKStages writes KWOK's configuration and the lifecycle stages it
// runs: its own fast node and pod stages, with pod deletion that honours the
// grace period.
func writeKWOKStages(stateDir string) (string, error) {
	docs := []string{
		kwokOptions,
		nodefast.DefaultNodeInit,
		nodeheartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podDeleteAfterGrace,
	}
	path, err := filepath.Abs(filepath.Join(stateDir, "kwok-stages.yaml"))
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o644)
}
