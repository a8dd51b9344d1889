package awsemulator

import (
	"fmt"
	"time"
)

// Owner accounts of the AWS-published AMI families (all carry the "amazon" owner alias).
const (
	ownerEKS          = "602401143452"
	ownerBottlerocket = "092701018921"
	ownerWindows      = "801119661308"
)

// KubernetesVersions are the minors the seed publishes AMIs and SSM parameters for.
var KubernetesVersions = []string{"1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37"}

// release is one AMI release of a family: the old one and the latest.
type release struct {
	version string // as in names: v20251101, 1.49.0
	created time.Time
	latest  bool
}

var (
	oldCreated    = time.Date(2025, 11, 1, 0, 0, 0, 0, time.UTC)
	latestCreated = time.Date(2025, 11, 15, 0, 0, 0, 0, time.UTC)
	// oldDeprecated is when the old release of the oldest versions was deprecated.
	oldDeprecated = time.Date(2025, 11, 20, 0, 0, 0, 0, time.UTC)

	eksReleases          = []release{{"v20251101", oldCreated, false}, {"v20251115", latestCreated, true}}
	bottlerocketReleases = []release{{"1.49.0", oldCreated, false}, {"1.50.0", latestCreated, true}}
)

// deprecatedVersions: the oldest minors, whose old release is deprecated.
var deprecatedVersions = map[string]bool{"1.28": true, "1.29": true}

// lastAL2Version: AWS publishes no AL2 EKS AMIs after 1.32.
const lastAL2Version = "1.32"

func (s *state) addSeedImage(img *Image, params ...string) {
	img.ID = hexID("ami", s.opts.Region, img.Name)
	img.State = "available"
	img.Public = true
	img.OwnerAlias = "amazon"
	if img.Tags == nil {
		img.Tags = map[string]string{}
	}
	s.images[img.ID] = img
	for _, p := range params {
		s.putParameter(p, img.ID, img.CreationDate)
	}
}

func (s *state) deprecation(k8s string, r release) time.Time {
	if !r.latest && deprecatedVersions[k8s] {
		return oldDeprecated
	}
	return time.Time{}
}

func (s *state) seedImages() {
	for _, k8s := range KubernetesVersions {
		s.seedAL2(k8s)
		s.seedAL2023(k8s)
		s.seedBottlerocket(k8s)
		s.seedWindows(k8s)
	}
	for _, arch := range []string{"x86_64", "arm64"} {
		name := "custom-al2023-" + arch
		s.images[hexID("ami", s.opts.Region, name)] = &Image{
			ID: hexID("ami", s.opts.Region, name), Name: name, Description: "Custom AL2023 image built by the account",
			OwnerID: s.opts.AccountID, Architecture: arch, CreationDate: latestCreated, State: "available",
			Tags: map[string]string{"karpenter.sh/discovery": s.opts.ClusterName, "Name": name},
		}
	}
}

func (s *state) seedAL2(k8s string) {
	if versionLess(lastAL2Version, k8s) {
		return
	}
	variants := []struct{ dir, namePart, arch string }{
		{"amazon-linux-2", "amazon-eks-node", "x86_64"},
		{"amazon-linux-2-arm64", "amazon-eks-arm64-node", "arm64"},
		{"amazon-linux-2-gpu", "amazon-eks-gpu-node", "x86_64"},
	}
	for _, v := range variants {
		for _, r := range eksReleases {
			name := fmt.Sprintf("%s-%s-%s", v.namePart, k8s, r.version)
			base := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/%s/", k8s, v.dir)
			params := []string{base + name + "/image_id"}
			if r.latest {
				params = append(params, base+"recommended/image_id")
			}
			s.addSeedImage(&Image{
				Name: name, Description: fmt.Sprintf("EKS Kubernetes Worker AMI with AmazonLinux2 image, (k8s: %s, release: %s)", k8s, r.version),
				OwnerID: ownerEKS, Architecture: v.arch, CreationDate: r.created, DeprecationTime: s.deprecation(k8s, r),
			}, params...)
		}
	}
}

func (s *state) seedAL2023(k8s string) {
	variants := []struct{ arch, variant string }{
		{"x86_64", "standard"}, {"arm64", "standard"}, {"x86_64", "nvidia"}, {"x86_64", "neuron"}, {"arm64", "nvidia"},
	}
	for _, v := range variants {
		for _, r := range eksReleases {
			name := fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", v.arch, v.variant, k8s, r.version)
			base := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/", k8s, v.arch, v.variant)
			params := []string{base + name + "/image_id"}
			if r.latest {
				params = append(params, base+"recommended/image_id")
			}
			s.addSeedImage(&Image{
				Name: name, Description: fmt.Sprintf("EKS-optimized Kubernetes node based on Amazon Linux 2023, (k8s: %s, variant: %s, release: %s)", k8s, v.variant, r.version),
				OwnerID: ownerEKS, Architecture: v.arch, CreationDate: r.created, DeprecationTime: s.deprecation(k8s, r),
			}, params...)
		}
	}
}

func (s *state) seedBottlerocket(k8s string) {
	for _, flavor := range []string{"aws-k8s-" + k8s, "aws-k8s-" + k8s + "-nvidia"} {
		for _, arch := range []string{"x86_64", "arm64"} {
			nameArch := arch
			if arch == "arm64" {
				nameArch = "aarch64"
			}
			for _, r := range bottlerocketReleases {
				name := fmt.Sprintf("bottlerocket-%s-%s-v%s-%s", flavor, nameArch, r.version, hashHex(8, "bottlerocket", r.version))
				base := fmt.Sprintf("/aws/service/bottlerocket/%s/%s/", flavor, arch)
				params := []string{base + r.version + "/image_id"}
				if r.latest {
					params = append(params, base+"latest/image_id")
				}
				s.addSeedImage(&Image{
					Name: name, Description: "bottlerocket-" + flavor + " " + r.version,
					OwnerID: ownerBottlerocket, Architecture: arch, CreationDate: r.created, DeprecationTime: s.deprecation(k8s, r),
				}, params...)
			}
		}
	}
}

func (s *state) seedWindows(k8s string) {
	for _, year := range []string{"2019", "2022", "2025"} {
		family := fmt.Sprintf("Windows_Server-%s-English-Core-EKS_Optimized-%s", year, k8s)
		s.addSeedImage(&Image{
			Name: family + "-2025.11.15", Description: "Microsoft Windows Server " + year + " Core optimized for EKS and Kubernetes " + k8s,
			OwnerID: ownerWindows, Architecture: "x86_64", Platform: "windows", CreationDate: latestCreated,
		}, "/aws/service/ami-windows-latest/"+family+"/image_id")
	}
}

// versionLess compares "major.minor" Kubernetes versions.
func versionLess(a, b string) bool {
	var amaj, amin, bmaj, bmin int
	fmt.Sscanf(a, "%d.%d", &amaj, &amin)
	fmt.Sscanf(b, "%d.%d", &bmaj, &bmin)
	if amaj != bmaj {
		return amaj < bmaj
	}
	return amin < bmin
}
