package awsemulator

import (
	"fmt"
	"strings"
)

// parseAL2Script finds the /etc/eks/bootstrap.sh call in a shell script and reads its
// arguments: the cluster name first, then --apiserver-endpoint, --b64-cluster-ca,
// --dns-cluster-ip, --use-max-pods and --kubelet-extra-args (the kubelet's flags).
func parseAL2Script(nb *NodeBootstrap, script string) error {
	for _, line := range logicalLines(script) {
		if !strings.Contains(line, "bootstrap.sh") || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		words, err := shellWords(line)
		if err != nil {
			return fmt.Errorf("bootstrap.sh line: %w", err)
		}
		start := -1
		for i, w := range words {
			if strings.HasSuffix(w, "bootstrap.sh") {
				start = i + 1
				break
			}
		}
		if start < 0 {
			continue
		}
		nb.Format = BootstrapAL2
		args := words[start:]
		for i := 0; i < len(args); i++ {
			a := args[i]
			if !strings.HasPrefix(a, "--") {
				if nb.ClusterName == "" {
					nb.ClusterName = a
				}
				continue
			}
			name, value, hasValue := strings.Cut(a, "=")
			if !hasValue {
				if i+1 >= len(args) {
					return fmt.Errorf("bootstrap.sh %s has no value", name)
				}
				i++
				value = args[i]
			}
			switch name {
			case "--apiserver-endpoint":
				nb.APIServer = value
			case "--b64-cluster-ca":
				nb.CABundle = value
			case "--dns-cluster-ip":
				nb.DNSClusterIP = value
			case "--kubelet-extra-args":
				extra, err := shellWords(value)
				if err != nil {
					return fmt.Errorf("bootstrap.sh --kubelet-extra-args: %w", err)
				}
				if err := applyKubeletArgs(nb, extra, "bootstrap.sh --kubelet-extra-args"); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return nil
}
