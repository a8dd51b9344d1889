package bootstrap

import (
	"fmt"
	"net"
	"strings"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// AL2 is the user data of Amazon Linux 2 EKS AMIs: a MIME archive of the
// class's parts followed by a script that runs /etc/eks/bootstrap.sh.
func AL2(o Options) (string, error) {
	parts, err := userParts(o.CustomUserData, false)
	if err != nil {
		return "", err
	}
	script, err := o.al2Script()
	if err != nil {
		return "", err
	}
	parts = append(parts, newPart(ContentTypeShellScript, script))
	return WriteMIME(parts)
}

// al2Script calls bootstrap.sh. Its options take their value as the next
// word (bootstrap.sh does not accept --opt=value); kubelet settings go
// through --kubelet-extra-args. --use-max-pods false stops bootstrap.sh from
// writing its own ENI-based max pods, since Karpenter passes --max-pods.
// The kubelet fields Karpenter does not read are merged into the AMI's
// kubelet-config.json first; bootstrap.sh then adds its own settings to that
// file, and the flags override both.
func (o Options) al2Script() (string, error) {
	if bad := unappliedPassThrough(awsv1.AMIFamilyAL2, o.Kubelet); len(bad) > 0 {
		return "", unappliedError(awsv1.AMIFamilyAL2, bad)
	}
	merge, err := o.al2KubeletConfigMerge()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash -xe\n")
	b.WriteString("exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n")
	b.WriteString(merge)
	fmt.Fprintf(&b, "/etc/eks/bootstrap.sh '%s' --apiserver-endpoint '%s'", o.ClusterName, o.ClusterEndpoint)
	if o.CABundle != "" {
		fmt.Fprintf(&b, " --b64-cluster-ca '%s'", o.CABundle)
	}
	dns := o.clusterDNS()
	if ip := net.ParseIP(dns); ip != nil && ip.To4() == nil {
		b.WriteString(" \\\n--ip-family ipv6")
	}
	if dns != "" {
		fmt.Fprintf(&b, " \\\n--dns-cluster-ip '%s'", dns)
	}
	if o.kubelet().MaxPods != nil {
		b.WriteString(" \\\n--use-max-pods false")
	}
	if args := o.kubeletFlags(true, true); len(args) > 0 {
		fmt.Fprintf(&b, " \\\n--kubelet-extra-args '%s'", strings.Join(args, " "))
	}
	if o.InstanceStorePolicy != nil && *o.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0 {
		b.WriteString(" \\\n--local-disks raid0")
	}
	return b.String(), nil
}

// userParts turns the class's userData into MIME parts: a MIME document's
// own parts, else one part holding the whole text. On AL2023 a bare YAML
// document is a NodeConfig; anything else is a shell script.
func userParts(userData string, nodeConfigAware bool) ([]Part, error) {
	if strings.TrimSpace(userData) == "" {
		return nil, nil
	}
	if isMIME(userData) {
		parts, err := ParseMIME(userData)
		if err != nil {
			return nil, fmt.Errorf("spec.userData is not a valid MIME multi-part document: %w", err)
		}
		return parts, nil
	}
	if nodeConfigAware && looksLikeNodeConfig(userData) {
		return []Part{newPart(ContentTypeNodeConfig, userData)}, nil
	}
	return []Part{newPart(ContentTypeShellScript, userData)}, nil
}
