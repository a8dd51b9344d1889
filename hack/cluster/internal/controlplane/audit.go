package controlplane

import (
	"os"
	"path/filepath"
)

// auditPolicy records the writes to NodeClaims and nothing else: creates with
// their response (which names the NodeClaim a generateName create made),
// other writes at Metadata level. A benchmark reads from it the API server's
// own time for each of Karpenter's creates (requestReceivedTimestamp ->
// stageTimestamp) and, for requests slower than the API server's threshold,
// its latency breakdown (the apiserver.latency.k8s.io/* annotations), to set
// against the time the client waited. Only the ResponseComplete stage is
// written: it carries both times.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  verbs: [create]
  resources:
  - group: karpenter.sh
    resources: [nodeclaims]
- level: Metadata
  verbs: [update, patch]
  resources:
  - group: karpenter.sh
    resources: [nodeclaims, nodeclaims/status]
- level: None
`

// AuditLogPath is where AuditNodeClaims writes the audit log.
func AuditLogPath(stateDir string) string {
	return filepath.Join(stateDir, "logs", "audit.log")
}

// auditArgs are kube-apiserver's flags for Config.AuditNodeClaims: the policy
// above and a log file the API server writes synchronously (a few hundred
// events per benchmark run).
func auditArgs(cfg Config) ([]string, error) {
	if !cfg.AuditNodeClaims {
		return nil, nil
	}
	policy, err := filepath.Abs(filepath.Join(cfg.StateDir, "audit-policy.yaml"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return nil, err
	}
	logPath, err := filepath.Abs(AuditLogPath(cfg.StateDir))
	if err != nil {
		return nil, err
	}
	return []string{"--audit-policy-file=" + policy, "--audit-log-path=" + logPath, "--audit-log-format=json"}, nil
}
