package awsemulator

import (
	"fmt"
	"strings"
)

// parseWindows reads the PowerShell call of the EKS bootstrap script
// (Start-EKSBootstrap.ps1 -EKSClusterName ... -KubeletExtraArgs '...'); PowerShell
// parameter names are case-insensitive.
func parseWindows(nb *NodeBootstrap, doc string) error {
	for _, line := range strings.Split(strings.ReplaceAll(doc, "\r\n", "\n"), "\n") {
		if !strings.Contains(strings.ToLower(line), "-eksclustername") {
			continue
		}
		words, err := shellWords(strings.ReplaceAll(line, "`", ""))
		if err != nil {
			return fmt.Errorf("Start-EKSBootstrap.ps1 line: %w", err)
		}
		nb.Format = BootstrapWindows
		for i := 0; i < len(words); i++ {
			name := strings.ToLower(words[i])
			if !strings.HasPrefix(name, "-") || i+1 >= len(words) {
				continue
			}
			value := words[i+1]
			switch name {
			case "-eksclustername":
				nb.ClusterName = value
			case "-apiserverendpoint":
				nb.APIServer = value
			case "-base64clusterca":
				nb.CABundle = value
			case "-dnsclusterip":
				nb.DNSClusterIP = value
			case "-kubeletextraargs":
				extra, err := shellWords(value)
				if err != nil {
					return fmt.Errorf("Start-EKSBootstrap.ps1 -KubeletExtraArgs: %w", err)
				}
				if err := applyKubeletArgs(nb, extra, "Start-EKSBootstrap.ps1 -KubeletExtraArgs"); err != nil {
					return err
				}
			default:
				continue
			}
			i++
		}
		return nil
	}
	return nil
}
