package launchtemplate

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
)

// clusterInfo fills what the options left empty (API server endpoint, CA
// bundle, service CIDR, cluster DNS address) from EKS DescribeCluster, once;
// a failed look-up is tried again at the next launch.
func (p *Provider) clusterInfo(ctx context.Context) (Options, error) {
	p.mu.Lock()
	opts := p.opts
	p.mu.Unlock()
	if p.eks == nil || (opts.ClusterEndpoint != "" && opts.ClusterCIDR != "" && opts.ClusterCABundle != "") || p.discovered.Load() {
		return withDNS(opts), nil
	}
	out, err := p.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(opts.ClusterName)})
	if err != nil {
		if opts.ClusterEndpoint != "" {
			// Enough to launch; the CIDR has family defaults.
			return withDNS(opts), nil
		}
		return opts, fmt.Errorf("CLUSTER_ENDPOINT is not set and EKS DescribeCluster %q failed: %w", opts.ClusterName, err)
	}
	c := out.Cluster
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.opts.ClusterEndpoint == "" {
		p.opts.ClusterEndpoint = aws.ToString(c.Endpoint)
	}
	if p.opts.ClusterCABundle == "" && c.CertificateAuthority != nil {
		p.opts.ClusterCABundle = aws.ToString(c.CertificateAuthority.Data)
	}
	if p.opts.ClusterCIDR == "" && c.KubernetesNetworkConfig != nil {
		p.opts.ClusterCIDR = aws.ToString(c.KubernetesNetworkConfig.ServiceIpv4Cidr)
	}
	p.discovered.Store(true)
	return withDNS(p.opts), nil
}

// withDNS derives the cluster DNS address (the service CIDR's .10, as EKS
// places kube-dns) when it is not given: the fallback when the kube-dns
// Service's ClusterIP could not be read at start-up.
func withDNS(o Options) Options {
	if o.KubeDNSIP != "" || o.ClusterCIDR == "" {
		return o
	}
	prefix, err := netip.ParsePrefix(o.ClusterCIDR)
	if err != nil || !prefix.Addr().Is4() {
		return o
	}
	a := prefix.Masked().Addr().As4()
	a[3] += 10
	o.KubeDNSIP = netip.AddrFrom4(a).String()
	return o
}
