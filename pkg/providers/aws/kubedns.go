package aws

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// KubeDNSService is the Service whose ClusterIP nodes get as their cluster
// DNS address (kubelet clusterDNS) when an EC2NodeClass does not set one. The
// chart's Role <fullname>-dns in kube-system grants the one get it needs.
var KubeDNSService = client.ObjectKey{Namespace: "kube-system", Name: "kube-dns"}

// kubeDNSTimeout bounds the look-up at start-up: a slow API server delays
// nothing but the choice of the fallback.
const kubeDNSTimeout = 10 * time.Second

// KubeDNSIP reads the ClusterIP of the kube-system/kube-dns Service, IPv4 or
// IPv6. It is an error when the Service cannot be read or has no ClusterIP
// (headless, or not yet allocated).
func KubeDNSIP(ctx context.Context, reader client.Reader) (netip.Addr, error) {
	if reader == nil {
		return netip.Addr{}, errors.New("no Kubernetes client")
	}
	ctx, cancel := context.WithTimeout(ctx, kubeDNSTimeout)
	defer cancel()
	svc := &corev1.Service{}
	if err := reader.Get(ctx, KubeDNSService, svc); err != nil {
		return netip.Addr{}, err
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("service %s has no cluster IP (spec.clusterIP %q)", KubeDNSService, svc.Spec.ClusterIP)
	}
	return ip.Unmap(), nil
}

// kubeDNSFallback names what nodes get instead when the kube-dns Service gives
// no address (the launch template provider's derivation from the service CIDR).
const kubeDNSFallback = "the service CIDR's .10 (CIDR from EKS DescribeCluster), or the AMI family's own default when that CIDR is unknown"

// discoverKubeDNS is the nodes' cluster DNS address: the kube-dns Service's
// ClusterIP, or "" (the fallback) when it cannot be read, which it logs once
// in one line naming the fallback. A cluster with its own DNS set-up keeps
// working: nothing fails on it.
func discoverKubeDNS(ctx context.Context, reader client.Reader) string {
	ip, err := KubeDNSIP(ctx, reader)
	if err != nil {
		log.FromContext(ctx).Info("kube-dns Service unavailable, nodes' cluster DNS falls back to "+kubeDNSFallback,
			"service", KubeDNSService.String(), "reason", err.Error())
		return ""
	}
	log.FromContext(ctx).V(1).Info("discovered kube dns", "kube-dns-ip", ip.String())
	return ip.String()
}
