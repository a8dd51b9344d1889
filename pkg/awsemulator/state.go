package awsemulator

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strings"
	"time"
)

// state is everything the emulator knows. One mutex (Emulator.mu) guards all of it:
// handlers lock, read or edit, unlock. Instances and launch templates are maps here
// like the rest (see doc.go).
type state struct {
	opts  Options
	vpcID string
	zones []zone

	subnets        map[string]*Subnet
	securityGroups map[string]*SecurityGroup
	images         map[string]*Image

	instanceTypes     []*instanceType // sorted by name
	instanceTypeIndex map[string]*instanceType
	offered           map[string]map[string]bool // type -> zone name -> offered
	spotPrices        map[offeringKey]float64    // (type, zone) -> USD/h
	insufficient      map[capacityKey]bool       // (capacity type, type, zone) out of capacity
	// tenancyUnsupported are (instance type, tenancy) pairs EC2 refuses to launch
	// (SetTenancyUnsupported).
	tenancyUnsupported map[tenancyKey]bool

	parameters       map[string]*Parameter
	roles            map[string]*Role
	instanceProfiles map[string]*InstanceProfile
	cluster          *Cluster
	queues           map[string]*queue
	pricing          []priceItem // built on first GetProducts

	denied map[string]bool // "service/Action"

	launchTemplates map[string]*LaunchTemplate // by ID
	instances       map[string]*Instance       // by ID
	instanceOrder   []string                   // launch order
	health          map[string]*InstanceHealth // by instance ID; see ec2_instancestatus.go
	addressSeq      map[string]int             // subnet ID -> addresses handed out

	capacityReservations map[string]*CapacityReservation // by ID; see ec2_capacityreservations.go
	placementGroups      map[string]*PlacementGroup      // by name; see ec2_placementgroups.go
	reservationRefusals  map[string]int                  // fleet requests refused for a full reservation, by ID

	lifecycle *lifecycle // transitions, EventBridge, Node registration (lifecycle.go)

	arc arcState // ARC zonal shifts (arczonalshift.go)

	seq int // deterministic counter for generated IDs
}

type zone struct{ name, id string }

type offeringKey struct{ instanceType, zone string }

type capacityKey struct{ capacityType, instanceType, zone string }

// Subnet is an EC2 subnet. Zero ID/VPCID/ZoneID/CIDR are filled in by AddSubnet.
type Subnet struct {
	ID                  string
	VPCID               string
	Zone                string // availability zone name, e.g. us-west-2a
	ZoneID              string // e.g. usw2-az1
	CIDR                string
	AvailableIPs        int
	MapPublicIPOnLaunch bool
	Tags                map[string]string
}

// SecurityGroup is an EC2 security group.
type SecurityGroup struct {
	ID          string
	Name        string
	Description string
	VPCID       string
	Tags        map[string]string
}

// Image is an AMI.
type Image struct {
	ID              string
	Name            string
	Description     string
	OwnerID         string // account id; "" = the emulator's account
	OwnerAlias      string // "amazon" for AWS-published images
	Architecture    string // x86_64 | arm64
	Platform        string // "windows" or ""
	CreationDate    time.Time
	DeprecationTime time.Time // zero: never deprecated
	State           string    // "" = available
	Public          bool
	Tags            map[string]string
}

func (i *Image) deprecated(now time.Time) bool {
	return !i.DeprecationTime.IsZero() && !i.DeprecationTime.After(now)
}

// Parameter is an SSM parameter.
type Parameter struct {
	Name         string
	Value        string
	Version      int64
	LastModified time.Time
}

// Role is an IAM role.
type Role struct {
	Name       string
	ID         string
	Path       string
	ARN        string
	CreateDate time.Time
}

// InstanceProfile is an IAM instance profile.
type InstanceProfile struct {
	Name       string
	ID         string
	Path       string
	ARN        string
	Roles      []string // role names (IAM allows one)
	Tags       map[string]string
	CreateDate time.Time
}

// Cluster is the EKS cluster.
type Cluster struct {
	Name                 string
	ARN                  string
	Version              string
	Endpoint             string
	CertificateAuthority string // base64 PEM
	ServiceIPv4CIDR      string
	Status               string
	PlatformVersion      string
	RoleARN              string
	CreatedAt            time.Time
}

// hashHex is n hex digits of a hash of the parts.
func hashHex(n int, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])[:n]
}

// hexID is a deterministic AWS-shaped ID: prefix-<17 hex digits> from the parts.
func hexID(prefix string, parts ...string) string {
	return prefix + "-" + hashHex(17, parts...)
}

// upperID is a deterministic IAM-shaped unique ID: prefix + 17 upper-case alphanumerics.
func upperID(prefix string, parts ...string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	var b strings.Builder
	b.WriteString(prefix)
	for i := 0; i < 17; i++ {
		b.WriteByte(alphabet[h[i]%32])
	}
	return b.String()
}

// fraction is a deterministic number in [0, 1) from the parts.
func fraction(parts ...string) float64 {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	n := uint64(0)
	for _, b := range h[:8] {
		n = n<<8 | uint64(b)
	}
	return float64(n>>11) / float64(1<<53)
}

func (s *state) zoneID(name string) string {
	for _, z := range s.zones {
		if z.name == name {
			return z.id
		}
	}
	return ""
}

func (s *state) nextSeq() string {
	s.seq++
	return fmt.Sprint(s.seq)
}

func cloneTags(t map[string]string) map[string]string {
	out := make(map[string]string, len(t))
	maps.Copy(out, t)
	return out
}

// --- state edits for tests (thread-safe) ---

func (e *Emulator) locked(f func(s *state)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f(e.st)
}

// AddSubnet adds (or replaces, by ID) a subnet and returns it with defaults filled in:
// ID derived from the call sequence, the emulator's VPC, zone ID from the zone name,
// a CIDR, 8187 free IPs if AvailableIPs is 0.
func (e *Emulator) AddSubnet(sn Subnet) Subnet {
	var out Subnet
	e.locked(func(s *state) {
		if sn.ID == "" {
			sn.ID = hexID("subnet", "added", s.nextSeq())
		}
		if sn.VPCID == "" {
			sn.VPCID = s.vpcID
		}
		if sn.ZoneID == "" {
			sn.ZoneID = s.zoneID(sn.Zone)
		}
		if sn.CIDR == "" {
			sn.CIDR = fmt.Sprintf("10.%d.%d.0/24", 200+s.seq/256%50, s.seq%256)
		}
		if sn.AvailableIPs == 0 {
			sn.AvailableIPs = 8187
		}
		sn.Tags = cloneTags(sn.Tags)
		s.subnets[sn.ID] = &sn
		out = sn
		out.Tags = cloneTags(sn.Tags)
	})
	return out
}

// SetSubnetAvailableIPs sets how many free addresses the subnet has; with
// none, a fleet launch into it fails with InsufficientFreeAddressesInSubnet
// (and DescribeSubnets reports 0, once a client asks again).
func (e *Emulator) SetSubnetAvailableIPs(id string, n int) error {
	if n < 0 {
		return fmt.Errorf("available addresses %d must not be negative", n)
	}
	var found bool
	e.locked(func(s *state) {
		if sn := s.subnets[id]; sn != nil {
			sn.AvailableIPs, found = n, true
		}
	})
	if !found {
		return fmt.Errorf("subnet %s does not exist", id)
	}
	return nil
}

// RemoveSubnet deletes a subnet; false if it did not exist.
func (e *Emulator) RemoveSubnet(id string) bool {
	found := false
	e.locked(func(s *state) { found = removed(s.subnets, id) })
	return found
}

// Subnets returns every subnet sorted by ID.
func (e *Emulator) Subnets() []Subnet {
	var out []Subnet
	e.locked(func(s *state) {
		out = sortedCopies(s.subnets, func(sn Subnet) Subnet { sn.Tags = cloneTags(sn.Tags); return sn })
	})
	return out
}

// AddSecurityGroup adds (or replaces, by ID) a security group; ID and VPC default as AddSubnet.
func (e *Emulator) AddSecurityGroup(g SecurityGroup) SecurityGroup {
	var out SecurityGroup
	e.locked(func(s *state) {
		if g.ID == "" {
			g.ID = hexID("sg", "added", g.Name, s.nextSeq())
		}
		if g.VPCID == "" {
			g.VPCID = s.vpcID
		}
		if g.Description == "" {
			g.Description = g.Name
		}
		g.Tags = cloneTags(g.Tags)
		s.securityGroups[g.ID] = &g
		out = g
		out.Tags = cloneTags(g.Tags)
	})
	return out
}

// RemoveSecurityGroup deletes a security group; false if it did not exist.
func (e *Emulator) RemoveSecurityGroup(id string) bool {
	found := false
	e.locked(func(s *state) { found = removed(s.securityGroups, id) })
	return found
}

// AddImage adds (or replaces, by ID) an AMI. Defaults: ID from the name, owner = the
// emulator's account, architecture x86_64, state available.
func (e *Emulator) AddImage(img Image) Image {
	var out Image
	e.locked(func(s *state) {
		if img.ID == "" {
			img.ID = hexID("ami", "added", img.Name, s.nextSeq())
		}
		if img.OwnerID == "" {
			img.OwnerID = s.opts.AccountID
		}
		if img.Architecture == "" {
			img.Architecture = "x86_64"
		}
		if img.State == "" {
			img.State = "available"
		}
		img.Tags = cloneTags(img.Tags)
		s.images[img.ID] = &img
		out = img
		out.Tags = cloneTags(img.Tags)
	})
	return out
}

// Images returns every AMI sorted by ID.
func (e *Emulator) Images() []Image {
	var out []Image
	e.locked(func(s *state) {
		out = sortedCopies(s.images, func(img Image) Image { img.Tags = cloneTags(img.Tags); return img })
	})
	return out
}

// DeprecateImage sets an AMI's deprecation time to now: DescribeImages hides it unless
// IncludeDeprecated, the caller owns it, or it is asked for by ID.
func (e *Emulator) DeprecateImage(id string) error {
	var err error
	e.locked(func(s *state) {
		img, ok := s.images[id]
		if !ok {
			err = fmt.Errorf("image %s does not exist", id)
			return
		}
		img.DeprecationTime = time.Now().UTC().Truncate(time.Second)
	})
	return err
}

// PutParameter creates or overwrites an SSM parameter (the version increments).
func (e *Emulator) PutParameter(name, value string) {
	e.locked(func(s *state) { s.putParameter(name, value, time.Now().UTC()) })
}

func (s *state) putParameter(name, value string, at time.Time) {
	p, ok := s.parameters[name]
	if !ok {
		p = &Parameter{Name: name}
		s.parameters[name] = p
	}
	p.Value = value
	p.Version++
	p.LastModified = at.Truncate(time.Millisecond)
}

// AddRole creates an IAM role at path "/" (no-op if it exists).
func (e *Emulator) AddRole(name string) {
	e.locked(func(s *state) { s.addRole(name, time.Now().UTC()) })
}

func (s *state) addRole(name string, at time.Time) {
	if _, ok := s.roles[name]; ok {
		return
	}
	s.roles[name] = &Role{
		Name: name, Path: "/", ID: upperID("AROA", "role", name),
		ARN:        "arn:aws:iam::" + s.opts.AccountID + ":role/" + name,
		CreateDate: at.Truncate(time.Second),
	}
}

// RemoveRole deletes an IAM role (profiles keep naming it, as IAM does).
func (e *Emulator) RemoveRole(name string) {
	e.locked(func(s *state) { delete(s.roles, name) })
}

// SetClusterVersion changes the EKS cluster's Kubernetes version.
func (e *Emulator) SetClusterVersion(v string) {
	e.locked(func(s *state) { s.cluster.Version = v })
}

// InstanceProfiles returns every instance profile sorted by name.
func (e *Emulator) InstanceProfiles() []InstanceProfile {
	var out []InstanceProfile
	e.locked(func(s *state) {
		out = sortedCopies(s.instanceProfiles, func(p InstanceProfile) InstanceProfile {
			p.Roles = append([]string(nil), p.Roles...)
			p.Tags = cloneTags(p.Tags)
			return p
		})
	})
	return out
}

// SetInsufficientCapacity marks (on) or clears the offering (capacityType "spot" or
// "on-demand", instance type, zone name) as out of capacity: launches there fail with
// InsufficientInstanceCapacity.
func (e *Emulator) SetInsufficientCapacity(capacityType, instanceType, zone string, on bool) {
	e.locked(func(s *state) {
		k := capacityKey{capacityType, instanceType, zone}
		if on {
			s.insufficient[k] = true
		} else {
			delete(s.insufficient, k)
		}
	})
}

type tenancyKey struct{ instanceType, tenancy string }

// SetTenancyUnsupported makes EC2 refuse (on) or accept again launches of
// instanceType with Placement.Tenancy tenancy ("dedicated", "default"): the
// fleet answers Unsupported for those pools, as EC2 does for instance types
// that cannot run as Dedicated Instances. Tenancy host always fails: the
// emulator has no Dedicated Hosts.
func (e *Emulator) SetTenancyUnsupported(instanceType, tenancy string, on bool) {
	e.locked(func(s *state) {
		if s.tenancyUnsupported == nil {
			s.tenancyUnsupported = map[tenancyKey]bool{}
		}
		k := tenancyKey{instanceType, tenancy}
		if on {
			s.tenancyUnsupported[k] = true
		} else {
			delete(s.tenancyUnsupported, k)
		}
	})
}

// DenyAction makes every request of service ("ec2", "iam", ...) and action answer the
// service's access-denied error (EC2 UnauthorizedOperation, IAM AccessDenied, JSON/REST
// AccessDeniedException), DryRun requests included.
func (e *Emulator) DenyAction(service, action string) {
	e.locked(func(s *state) { s.denied[service+"/"+action] = true })
}

// AllowAction lifts a DenyAction.
func (e *Emulator) AllowAction(service, action string) {
	e.locked(func(s *state) { delete(s.denied, service+"/"+action) })
}

func (e *Emulator) denied(c *call) *apiError {
	e.mu.Lock()
	deny := e.st.denied[c.svc.name+"/"+c.action]
	e.mu.Unlock()
	if !deny {
		return nil
	}
	principal := "arn:aws:iam::" + e.opts.AccountID + ":user/emulator"
	switch c.svc.protocol {
	case protoEC2Query:
		return errorf(403, "UnauthorizedOperation", "You are not authorized to perform this operation. User: %s is not authorized to perform: ec2:%s because no identity-based policy allows the ec2:%s action", principal, c.action, c.action)
	case protoAWSQuery:
		return errorf(403, "AccessDenied", "User: %s is not authorized to perform: %s:%s because no identity-based policy allows the %s:%s action", principal, c.svc.name, c.action, c.svc.name, c.action)
	default:
		status := 400
		if c.svc.protocol == protoRESTJSON {
			status = 403
		}
		return errorf(status, "AccessDeniedException", "User: %s is not authorized to perform: %s:%s because no identity-based policy allows the %s:%s action", principal, c.svc.name, c.action, c.svc.name, c.action)
	}
}
