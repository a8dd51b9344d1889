package bootstrap

import (
	"fmt"
	"regexp"
	"strings"
)

// powershellTags matches the <powershell> and </powershell> lines a user
// may have wrapped their script in; Karpenter writes one block around
// everything, so nested tags are dropped.
var powershellTags = regexp.MustCompile(`(?i)</?powershell>`)

// Windows is the user data of the Windows EKS AMIs: one PowerShell block
// running the class's script first, then Start-EKSBootstrap.ps1 with the
// kubelet's settings in -KubeletExtraArgs: the fields Karpenter reads, then
// the other fields that have a kubelet flag (see windowsKubeletFlags).
// Windows has no pods-per-core limit in its bootstrap, so podsPerCore is
// not passed.
func Windows(o Options) (string, error) {
	var b strings.Builder
	b.WriteString("<powershell>\n")
	if custom := strings.TrimSpace(powershellTags.ReplaceAllString(o.CustomUserData, "")); custom != "" {
		b.WriteString(custom + "\n")
	}
	b.WriteString(`[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"` + "\n")
	fmt.Fprintf(&b, "& $EKSBootstrapScriptFile -EKSClusterName '%s' -APIServerEndpoint '%s'", o.ClusterName, o.ClusterEndpoint)
	if o.CABundle != "" {
		fmt.Fprintf(&b, " -Base64ClusterCA '%s'", o.CABundle)
	}
	passThrough, err := o.windowsPassThroughFlags()
	if err != nil {
		return "", err
	}
	if args := append(o.kubeletFlags(false, true), passThrough...); len(args) > 0 {
		fmt.Fprintf(&b, " -KubeletExtraArgs '%s'", strings.Join(args, " "))
	}
	if dns := o.clusterDNS(); dns != "" {
		fmt.Fprintf(&b, " -DNSClusterIP '%s'", dns)
	}
	b.WriteString("\n</powershell>")
	return b.String(), nil
}

// Custom is the user data of Custom AMIs: the class's userData as written.
// Karpenter cannot know how such an AMI bootstraps, so the user must pass
// labels, taints (including karpenter.sh/unregistered:NoExecute) and kubelet
// settings themselves.
func Custom(o Options) string { return o.CustomUserData }
