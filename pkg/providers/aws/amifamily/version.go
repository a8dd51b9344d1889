package amifamily

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"

	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awserr"
)

// KubernetesVersionTTL is how long the cluster's version is remembered.
const KubernetesVersionTTL = 15 * time.Minute

// VersionProvider tells the cluster's Kubernetes version ("1.34"), which
// selects the EKS AMIs an alias resolves to.
type VersionProvider struct {
	eks         *eks.Client
	clusterName string
	discovery   discovery.ServerVersionInterface
	clock       clock.PassiveClock

	mu      sync.Mutex
	version string
	expires time.Time
}

// NewVersionProvider asks EKS DescribeCluster for clusterName first (eksapi
// may be nil) and, when that cluster does not exist or cannot be read, the
// API server itself (disc may be nil when EKS is enough).
func NewVersionProvider(eksapi *eks.Client, clusterName string, disc discovery.ServerVersionInterface, clk clock.PassiveClock) *VersionProvider {
	return &VersionProvider{eks: eksapi, clusterName: clusterName, discovery: disc, clock: clk}
}

// Get returns the version as "1.<minor>".
func (p *VersionProvider) Get(ctx context.Context) (string, error) {
	p.mu.Lock()
	if p.version != "" && p.clock.Now().Before(p.expires) {
		v := p.version
		p.mu.Unlock()
		return v, nil
	}
	p.mu.Unlock()

	var errs []error
	v, err := p.fromEKS(ctx)
	if err != nil {
		errs = append(errs, err)
		v, err = p.fromAPIServer()
		if err != nil {
			errs = append(errs, err)
			return "", fmt.Errorf("finding the cluster's Kubernetes version: %w", errors.Join(errs...))
		}
	}
	p.mu.Lock()
	p.version, p.expires = v, p.clock.Now().Add(KubernetesVersionTTL)
	p.mu.Unlock()
	return v, nil
}

func (p *VersionProvider) fromEKS(ctx context.Context) (string, error) {
	if p.eks == nil || p.clusterName == "" {
		return "", errors.New("EKS: no client or cluster name")
	}
	out, err := p.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(p.clusterName)})
	if err != nil {
		if awserr.IsNotFound(err) {
			return "", fmt.Errorf("EKS cluster %q does not exist", p.clusterName)
		}
		return "", fmt.Errorf("EKS DescribeCluster %q: %w", p.clusterName, err)
	}
	if out.Cluster == nil || out.Cluster.Version == nil {
		return "", fmt.Errorf("EKS cluster %q has no version", p.clusterName)
	}
	minor, err := ParseMinor(*out.Cluster.Version)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("1.%d", minor), nil
}

func (p *VersionProvider) fromAPIServer() (string, error) {
	if p.discovery == nil {
		return "", errors.New("API server: no discovery client")
	}
	info, err := p.discovery.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("API server version: %w", err)
	}
	minor, err := ParseMinor(info.Major + "." + info.Minor)
	if err != nil {
		if minor, err = ParseMinor(info.GitVersion); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("1.%d", minor), nil
}
