package launchtemplate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awserr"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Launch is one launch template ready for CreateFleet and the instance types
// that can be launched with it.
type Launch struct {
	Name, ID, ImageID string
	InstanceTypes     []*scheduling.InstanceType
	// CapacityReservationID is the reservation the template launches into
	// (capacity type reserved), of CapacityReservationType.
	CapacityReservationID   string
	CapacityReservationType awsv1.CapacityReservationType
	// Tenancy is the template's Placement.Tenancy (default or dedicated).
	Tenancy string
}

// Options are what the launch templates need from outside an EC2NodeClass.
type Options struct {
	ClusterName     string
	ClusterEndpoint string
	ClusterCABundle string
	ClusterCIDR     string
	// KubeDNSIP is the nodes' cluster DNS address (IPv4 or IPv6) when an
	// EC2NodeClass sets none: the kube-dns Service's ClusterIP read at
	// start-up; empty, the service CIDR's .10.
	KubeDNSIP string
	// TTL of a cached launch template after its last use (default DefaultTTL).
	TTL time.Duration
	// EKS, when set, fills an empty endpoint, CA bundle or service CIDR
	// from DescribeCluster.
	EKS *eks.Client
}

// DefaultTTL is how long a launch template stays cached after its last use
// (upstream's value).
const DefaultTTL = time.Minute

// NamePrefix starts the name of every launch template Karpenter manages.
const NamePrefix = awsv1.TagManagedLaunchTemplatePrefix

// Provider creates, caches and deletes launch templates. Safe for concurrent use.
type Provider struct {
	ec2      *ec2.Client
	resolver *amifamily.Resolver
	clk      clock.Clock
	opts     Options

	eks        *eks.Client
	discovered atomic.Bool

	mu       sync.Mutex
	cache    map[string]*entry // by name
	inflight map[string]*creation
}

type entry struct {
	id        string
	nodeClass string
	expires   time.Time
}

type creation struct {
	done chan struct{}
	id   string
	err  error
}

// NewProvider returns a Provider.
func NewProvider(ec2api *ec2.Client, resolver *amifamily.Resolver, clk clock.Clock, opts Options) *Provider {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	return &Provider{ec2: ec2api, eks: opts.EKS, resolver: resolver, clk: clk, opts: opts, cache: map[string]*entry{}, inflight: map[string]*creation{}}
}

// LaunchOptions are the amifamily options of a launch for nodeClaim.
// The resolver adds the NodeClaim's labels and taints.
func LaunchOptions(opts Options, nc *awsv1.EC2NodeClass, tags map[string]string) amifamily.LaunchOptions {
	sgs := make([]string, 0, len(nc.Status.SecurityGroups))
	for _, sg := range nc.Status.SecurityGroups {
		sgs = append(sgs, sg.ID)
	}
	sort.Strings(sgs)
	return amifamily.LaunchOptions{
		ClusterName:      opts.ClusterName,
		ClusterEndpoint:  opts.ClusterEndpoint,
		ClusterCABundle:  opts.ClusterCABundle,
		ClusterCIDR:      opts.ClusterCIDR,
		KubeDNSIP:        opts.KubeDNSIP,
		InstanceProfile:  nc.Status.InstanceProfile,
		SecurityGroupIDs: sgs,
		Tags:             tags,
		NodeClassName:    nc.Name,
	}
}

// EnsureAll returns one launch template per resolved option set, creating
// what is missing (name karpenter.k8s.aws/<hash>). tags are the tags of the
// instances, volumes and network interfaces launched with the templates;
// tenancy (default or dedicated; "" is default) is their Placement.Tenancy.
func (p *Provider) EnsureAll(ctx context.Context, nc *awsv1.EC2NodeClass, nodeClaim *v1.NodeClaim, instanceTypes []*scheduling.InstanceType, capacityType, tenancy string, tags map[string]string) ([]*Launch, error) {
	return p.EnsureAllIn(ctx, nc, nodeClaim, instanceTypes, capacityType, tenancy, Placement{}, tags)
}

// Placement is the placement group a launch goes into: GroupID ("" for
// none) and Partition (0: EC2 chooses).
type Placement struct {
	GroupID   string
	Partition int32
}

// EnsureAllIn is EnsureAll for launches into a placement group: the
// templates' Placement names the group (and partition).
func (p *Provider) EnsureAllIn(ctx context.Context, nc *awsv1.EC2NodeClass, nodeClaim *v1.NodeClaim, instanceTypes []*scheduling.InstanceType, capacityType, tenancy string, placement Placement, tags map[string]string) ([]*Launch, error) {
	p.Sweep(ctx)
	opts, err := p.clusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	launchOpts := LaunchOptions(opts, nc, tags)
	launchOpts.Tenancy = tenancyOrDefault(tenancy)
	launchOpts.PlacementGroupID, launchOpts.PlacementGroupPartition = placement.GroupID, placement.Partition
	resolved, err := p.resolver.Resolve(nc, nodeClaim, instanceTypes, capacityType, launchOpts)
	if err != nil {
		return nil, err
	}
	out := make([]*Launch, 0, len(resolved))
	for _, lt := range resolved {
		name := Name(lt)
		id, err := p.ensure(ctx, name, nc.Name, lt)
		if err != nil {
			return nil, err
		}
		out = append(out, &Launch{Name: name, ID: id, ImageID: lt.ImageID, InstanceTypes: lt.InstanceTypes,
			CapacityReservationID: lt.CapacityReservationID, CapacityReservationType: lt.CapacityReservationType, Tenancy: tenancyOrDefault(lt.Tenancy)})
	}
	return out, nil
}

func tenancyOrDefault(t string) string {
	if t == "" {
		return awsv1.InstanceTenancyDefault
	}
	return t
}

// Name is karpenter.k8s.aws/<hash of everything the template holds>.
// Tenancy counts only when it is not default, so that the templates of
// shared launches keep the names they had before tenancy was recorded,
// while a dedicated template never shares a name with a shared one.
func Name(lt *amifamily.LaunchTemplate) string {
	cp := *lt
	cp.InstanceTypes = nil // what may be launched with it, not what it holds
	if cp.Tenancy == awsv1.InstanceTenancyDefault {
		cp.Tenancy = ""
	}
	data, err := json.Marshal(cp)
	if err != nil {
		data = fmt.Appendf(nil, "%#v", cp)
	}
	h := fnv.New64a()
	_, _ = h.Write(data)
	return fmt.Sprintf("%s%d", NamePrefix, h.Sum64())
}

// ensure returns the id of the template, creating it once however many
// launches ask at the same time.
func (p *Provider) ensure(ctx context.Context, name, nodeClass string, lt *amifamily.LaunchTemplate) (string, error) {
	p.mu.Lock()
	if e, ok := p.cache[name]; ok && p.clk.Now().Before(e.expires) {
		e.expires = p.clk.Now().Add(p.opts.TTL)
		p.mu.Unlock()
		return e.id, nil
	}
	if c, ok := p.inflight[name]; ok {
		p.mu.Unlock()
		select {
		case <-c.done:
			return c.id, c.err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	c := &creation{done: make(chan struct{})}
	p.inflight[name] = c
	p.mu.Unlock()

	c.id, c.err = p.createOrFind(ctx, name, nodeClass, lt)
	p.mu.Lock()
	delete(p.inflight, name)
	if c.err == nil {
		p.cache[name] = &entry{id: c.id, nodeClass: nodeClass, expires: p.clk.Now().Add(p.opts.TTL)}
	}
	p.mu.Unlock()
	close(c.done)
	return c.id, c.err
}

func (p *Provider) createOrFind(ctx context.Context, name, nodeClass string, lt *amifamily.LaunchTemplate) (string, error) {
	// Measured before the create, so that user data EC2 refuses as too
	// large is still reported.
	userDataBytes.WithLabelValues(nodeClass).Set(float64(len(lt.UserData)))
	out, err := p.ec2.CreateLaunchTemplate(ctx, p.createInput(name, nodeClass, lt))
	if err == nil {
		log.FromContext(ctx).V(1).Info("created launch template", "name", name, "id", aws.ToString(out.LaunchTemplate.LaunchTemplateId))
		return aws.ToString(out.LaunchTemplate.LaunchTemplateId), nil
	}
	if awserr.Code(err) != "InvalidLaunchTemplateName.AlreadyExistsException" {
		return "", fmt.Errorf("creating launch template %s: %w", name, err)
	}
	// Created by another replica or before a restart: same name, same content.
	found, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	if err != nil {
		return "", fmt.Errorf("describing existing launch template %s: %w", name, err)
	}
	if len(found.LaunchTemplates) == 0 {
		return "", fmt.Errorf("launch template %s exists but was not found", name)
	}
	return aws.ToString(found.LaunchTemplates[0].LaunchTemplateId), nil
}

// Tags of the launch template itself: the launch's tags, the cluster's and
// the class's, so hydration and DeleteAll find it.
func (p *Provider) templateTags(nodeClass string, lt *amifamily.LaunchTemplate) map[string]string {
	out := map[string]string{}
	for k, v := range lt.Tags {
		out[k] = v
	}
	out[awsv1.TagClusterPrefix+p.opts.ClusterName] = "owned"
	out[awsv1.TagEKSClusterName] = p.opts.ClusterName
	out[awsv1.TagEC2NodeClass] = nodeClass
	return out
}

func (p *Provider) createInput(name, nodeClass string, lt *amifamily.LaunchTemplate) *ec2.CreateLaunchTemplateInput {
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:             aws.String(lt.ImageID),
		BlockDeviceMappings: blockDevices(lt.BlockDeviceMappings),
		MetadataOptions:     MetadataOptions(lt.MetadataOptions),
		Monitoring:          &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(lt.DetailedMonitoring)},
		Placement:           &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.Tenancy(tenancyOrDefault(lt.Tenancy))},
	}
	if lt.PlacementGroupID != "" {
		data.Placement.GroupId = aws.String(lt.PlacementGroupID)
		if lt.PlacementGroupPartition > 0 {
			data.Placement.PartitionNumber = aws.Int32(lt.PlacementGroupPartition)
		}
	}
	if lt.CapacityReservationID != "" {
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(lt.CapacityReservationID)},
		}
		if lt.CapacityReservationType == awsv1.CapacityReservationTypeCapacityBlock {
			data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
		}
	}
	if lt.InstanceProfile != "" {
		data.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(lt.InstanceProfile)}
	}
	if lt.UserData != "" {
		data.UserData = aws.String(base64.StdEncoding.EncodeToString([]byte(lt.UserData)))
	}
	if e := lt.EnclaveOptions; e != nil {
		data.EnclaveOptions = &ec2types.LaunchTemplateEnclaveOptionsRequest{Enabled: aws.Bool(e.Enabled)}
	}
	if c := lt.CPUOptions; c != nil && c.NestedVirtualization != nil {
		data.CpuOptions = &ec2types.LaunchTemplateCpuOptionsRequest{NestedVirtualization: ec2types.NestedVirtualizationSpecification(*c.NestedVirtualization)}
	}
	if len(lt.NetworkInterfaces) > 0 {
		data.NetworkInterfaces = classInterfaces(lt)
	} else if lt.AssociatePublicIPAddress != nil || lt.EFACount > 0 || lt.ConnectionTracking != nil || lt.IPPrefixCount != nil || lt.IPv6 {
		// Security groups then belong to the interfaces, not the template.
		n := max(1, lt.EFACount)
		for i := 0; i < n; i++ {
			ni := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
				DeviceIndex: aws.Int32(int32(min(i, 1))), NetworkCardIndex: aws.Int32(int32(i)), Groups: lt.SecurityGroupIDs,
			}
			if lt.EFACount > 0 {
				ni.InterfaceType = aws.String("efa")
			}
			if i == 0 {
				ni.AssociatePublicIpAddress = lt.AssociatePublicIPAddress
			}
			// Every interface the template creates (primary and EFA) gets
			// the class's prefixes, its IPv6 address in an IPv6 cluster,
			// and the connection tracking timeouts.
			withPrefixes(&ni, lt)
			withIPv6(&ni, lt)
			if c := lt.ConnectionTracking; c != nil {
				ni.ConnectionTrackingSpecification = &ec2types.ConnectionTrackingSpecificationRequest{
					TcpEstablishedTimeout: c.TCPEstablishedTimeout, UdpStreamTimeout: c.UDPStreamTimeout, UdpTimeout: c.UDPTimeout,
				}
			}
			data.NetworkInterfaces = append(data.NetworkInterfaces, ni)
		}
	} else {
		data.SecurityGroupIds = lt.SecurityGroupIDs
	}
	tags := EC2Tags(lt.Tags)
	for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeNetworkInterface} {
		data.TagSpecifications = append(data.TagSpecifications, ec2types.LaunchTemplateTagSpecificationRequest{ResourceType: rt, Tags: tags})
	}
	return &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
		TagSpecifications: []ec2types.TagSpecification{{
			ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: EC2Tags(p.templateTags(nodeClass, lt)),
		}},
	}
}

// withPrefixes gives an interface the class's ipPrefixCount, as IPv6 or IPv4
// prefixes after the cluster's IP family.
func withPrefixes(ni *ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest, lt *amifamily.LaunchTemplate) {
	if lt.IPPrefixCount == nil {
		return
	}
	if lt.IPv6Prefixes {
		ni.Ipv6PrefixCount = aws.Int32(*lt.IPPrefixCount)
	} else {
		ni.Ipv4PrefixCount = aws.Int32(*lt.IPPrefixCount)
	}
}

// withIPv6 gives an interface of an IPv6 cluster one IPv6 address, made
// its primary IPv6 address (the node's address in the cluster); EC2 refuses
// both on efa-only interfaces, which carry no IP traffic.
func withIPv6(ni *ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest, lt *amifamily.LaunchTemplate) {
	if !lt.IPv6 {
		return
	}
	ni.PrimaryIpv6 = aws.Bool(true)
	ni.Ipv6AddressCount = aws.Int32(1)
}

// classInterfaces renders the class's spec.networkInterfaces, in order.
// Every interface gets the class's security groups; none names a subnet
// (the fleet override's subnet applies). EFA-only interfaces carry no IP
// traffic, so EC2 refuses prefixes, a public address, IPv6 addresses or
// connection tracking on them: those go to the other interfaces only.
func classInterfaces(lt *amifamily.LaunchTemplate) []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
	out := make([]ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest, 0, len(lt.NetworkInterfaces))
	for _, n := range lt.NetworkInterfaces {
		ni := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			NetworkCardIndex: aws.Int32(n.NetworkCardIndex),
			DeviceIndex:      aws.Int32(n.DeviceIndex),
			InterfaceType:    aws.String(string(n.InterfaceType)),
			Groups:           lt.SecurityGroupIDs,
		}
		if n.InterfaceType != awsv1.InterfaceTypeEFAOnly {
			ni.AssociatePublicIpAddress = lt.AssociatePublicIPAddress
			withPrefixes(&ni, lt)
			withIPv6(&ni, lt)
			if c := lt.ConnectionTracking; c != nil && (c.TCPEstablishedTimeout != nil || c.UDPStreamTimeout != nil || c.UDPTimeout != nil) {
				ni.ConnectionTrackingSpecification = &ec2types.ConnectionTrackingSpecificationRequest{
					TcpEstablishedTimeout: c.TCPEstablishedTimeout, UdpStreamTimeout: c.UDPStreamTimeout, UdpTimeout: c.UDPTimeout,
				}
			}
		}
		out = append(out, ni)
	}
	return out
}

// EC2Tags renders tags for EC2 requests, sorted by key so that equal maps
// make equal requests (CreateFleet batching hashes them).
func EC2Tags(m map[string]string) []ec2types.Tag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]ec2types.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

// MetadataOptions renders an EC2NodeClass's metadataOptions for a launch
// template (also the EC2NodeClass validation's dry run).
func MetadataOptions(m *awsv1.MetadataOptions) *ec2types.LaunchTemplateInstanceMetadataOptionsRequest {
	if m == nil {
		return nil
	}
	out := &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{}
	if m.HTTPPutResponseHopLimit != nil {
		out.HttpPutResponseHopLimit = aws.Int32(int32(*m.HTTPPutResponseHopLimit))
	}
	if m.HTTPEndpoint != nil {
		out.HttpEndpoint = ec2types.LaunchTemplateInstanceMetadataEndpointState(*m.HTTPEndpoint)
	}
	if m.HTTPProtocolIPv6 != nil {
		out.HttpProtocolIpv6 = ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(*m.HTTPProtocolIPv6)
	}
	if m.HTTPTokens != nil {
		out.HttpTokens = ec2types.LaunchTemplateHttpTokensState(*m.HTTPTokens)
	}
	return out
}

func blockDevices(bdms []*awsv1.BlockDeviceMapping) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	var out []ec2types.LaunchTemplateBlockDeviceMappingRequest
	for _, b := range bdms {
		if b == nil {
			continue
		}
		m := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: b.DeviceName}
		if e := b.EBS; e != nil {
			m.Ebs = &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted, KmsKeyId: e.KMSKeyID, SnapshotId: e.SnapshotID,
				VolumeType: ec2types.VolumeType(aws.ToString(e.VolumeType)),
			}
			if e.VolumeSize != nil {
				// EBS sizes are whole GiB; round up.
				m.Ebs.VolumeSize = aws.Int32(int32((e.VolumeSize.Value() + (1<<30 - 1)) >> 30))
			}
			if e.IOPS != nil {
				m.Ebs.Iops = aws.Int32(int32(*e.IOPS))
			}
			if e.Throughput != nil {
				m.Ebs.Throughput = aws.Int32(int32(*e.Throughput))
			}
			m.Ebs.VolumeInitializationRate = e.VolumeInitializationRate
		}
		out = append(out, m)
	}
	return out
}

// Hydrate caches the cluster's existing Karpenter launch templates (found by
// their eks:eks-cluster-name tag), so that they are reused, and deleted if
// unused for a TTL, after a restart.
func (p *Provider) Hydrate(ctx context.Context) error {
	pages := ec2.NewDescribeLaunchTemplatesPaginator(p.ec2, &ec2.DescribeLaunchTemplatesInput{
		Filters: []ec2types.Filter{{Name: aws.String("tag:" + awsv1.TagEKSClusterName), Values: []string{p.opts.ClusterName}}},
	})
	now := p.clk.Now()
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing the cluster's launch templates: %w", err)
		}
		p.mu.Lock()
		for _, lt := range page.LaunchTemplates {
			name := aws.ToString(lt.LaunchTemplateName)
			if !strings.HasPrefix(name, NamePrefix) {
				continue
			}
			if _, ok := p.cache[name]; !ok {
				p.cache[name] = &entry{id: aws.ToString(lt.LaunchTemplateId), nodeClass: tagValue(lt.Tags, awsv1.TagEC2NodeClass), expires: now.Add(p.opts.TTL)}
			}
		}
		p.mu.Unlock()
	}
	return nil
}

func tagValue(tags []ec2types.Tag, key string) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// Sweep deletes the templates whose cache entry expired (unused for a TTL).
func (p *Provider) Sweep(ctx context.Context) {
	now := p.clk.Now()
	var expired []*entry
	var names []string
	p.mu.Lock()
	for name, e := range p.cache {
		if !now.Before(e.expires) {
			expired = append(expired, e)
			names = append(names, name)
			delete(p.cache, name)
		}
	}
	p.mu.Unlock()
	for i, e := range expired {
		if err := p.delete(ctx, e.id); err != nil {
			log.FromContext(ctx).Error(err, "deleting unused launch template", "name", names[i], "id", e.id)
		}
	}
}

func (p *Provider) delete(ctx context.Context, id string) error {
	_, err := p.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(id)})
	if err != nil && !awserr.IsNotFound(err) {
		return err
	}
	return nil
}

// Start hydrates the cache, then sweeps it every TTL until ctx ends (a
// manager Runnable: runs on the leader).
func (p *Provider) Start(ctx context.Context) error {
	if err := p.Hydrate(ctx); err != nil {
		log.FromContext(ctx).Error(err, "hydrating the launch template cache")
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-p.clk.After(p.opts.TTL):
			p.Sweep(ctx)
		}
	}
}

// DeleteAll deletes every launch template of the class (tags
// kubernetes.io/cluster/<c> and karpenter.k8s.aws/ec2nodeclass=<name>).
func (p *Provider) DeleteAll(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	pages := ec2.NewDescribeLaunchTemplatesPaginator(p.ec2, &ec2.DescribeLaunchTemplatesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("tag-key"), Values: []string{awsv1.TagClusterPrefix + p.opts.ClusterName}},
			{Name: aws.String("tag:" + awsv1.TagEC2NodeClass), Values: []string{nc.Name}},
		},
	})
	var errs []error
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing launch templates of EC2NodeClass %q: %w", nc.Name, err)
		}
		for _, lt := range page.LaunchTemplates {
			p.Invalidate(ctx, aws.ToString(lt.LaunchTemplateName), aws.ToString(lt.LaunchTemplateId))
			if err := p.delete(ctx, aws.ToString(lt.LaunchTemplateId)); err != nil {
				errs = append(errs, fmt.Errorf("deleting launch template %s: %w", aws.ToString(lt.LaunchTemplateName), err))
			}
		}
	}
	userDataBytes.DeleteLabelValues(nc.Name)
	return errors.Join(errs...)
}

// Invalidate forgets a cached launch template (e.g. EC2 said it is gone), so
// the next launch creates it again.
func (p *Provider) Invalidate(_ context.Context, name, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.cache[name]; ok && (id == "" || e.id == id) {
		delete(p.cache, name)
	}
}
