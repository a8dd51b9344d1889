package awsemulator

import (
	"strconv"
	"strings"
	"time"
)

var imageFilters = nameSet("image-id", "name", "owner-id", "owner-alias", "state", "architecture", "is-public",
	"platform", "image-type", "virtualization-type", "root-device-type", "root-device-name", "description",
	"hypervisor", "creation-date", "deprecation-time")

// ec2DescribeImages: ImageId.N, Owner.N (self, amazon, account ids), Filter.N,
// IncludeDeprecated, MaxResults/NextToken. Deprecated images are left out unless
// IncludeDeprecated, the caller owns them, or they are asked for by ID (as EC2 does).
func ec2DescribeImages(c *call) (any, error) {
	filters := parseFilters(c)
	if err := checkFilters(filters, imageFilters); err != nil {
		return nil, err
	}
	ids, owners := c.list("ImageId"), c.list("Owner")
	if err := idsWithMaxResults(c, ids, "imageIds"); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !strings.HasPrefix(id, "ami-") {
			return nil, errorf(400, "InvalidAMIID.Malformed", "Invalid id: \"%s\" (expecting \"ami-...\")", id)
		}
	}
	includeDeprecated := c.boolean("IncludeDeprecated")
	now := time.Now()
	var matched []Image
	var apiErr *apiError
	c.e.locked(func(s *state) {
		var missing []string
		for _, id := range ids {
			if img := s.images[id]; img == nil || !(img.Public || img.OwnerID == s.opts.AccountID) {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			apiErr = errorf(400, "InvalidAMIID.NotFound", "The image id '[%s]' does not exist", strings.Join(missing, ", "))
			return
		}
		want := nameSet(ids...)
		for _, id := range sortedKeys(s.images) {
			img := s.images[id]
			own := img.OwnerID == s.opts.AccountID
			if len(want) > 0 && !want[id] {
				continue
			}
			if !img.Public && !own {
				continue
			}
			if len(owners) > 0 && !ownerMatches(owners, img, s.opts.AccountID) {
				continue
			}
			if img.deprecated(now) && !includeDeprecated && !own && len(want) == 0 {
				continue
			}
			if !matchFilters(filters, imageFields(img), img.Tags) {
				continue
			}
			cp := *img
			cp.Tags = cloneTags(img.Tags)
			matched = append(matched, cp)
		}
	})
	if apiErr != nil {
		return nil, apiErr
	}
	items, next, apiErr := paginate(c, matched, page{def: 0, min: 6, max: 1000})
	if apiErr != nil {
		return nil, apiErr
	}
	var b xb
	b.open("imagesSet")
	for i := range items {
		writeImage(&b, &items[i])
	}
	b.close("imagesSet")
	b.leaf("nextToken", next)
	return b.body(), nil
}

func ownerMatches(owners []string, img *Image, account string) bool {
	for _, o := range owners {
		switch o {
		case "self":
			if img.OwnerID == account {
				return true
			}
		case "amazon", "aws-marketplace", "aws-backup-vault":
			if img.OwnerAlias == o {
				return true
			}
		default:
			if img.OwnerID == o {
				return true
			}
		}
	}
	return false
}

func rootDevice(img *Image) string {
	if img.Platform == "windows" {
		return "/dev/sda1"
	}
	return "/dev/xvda"
}

func imageFields(img *Image) filterFields {
	platform := ""
	if img.Platform == "windows" {
		platform = "windows"
	}
	dep := ""
	if !img.DeprecationTime.IsZero() {
		dep = img.DeprecationTime.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	return fieldMap(map[string][]string{
		"image-id": {img.ID}, "name": {img.Name}, "owner-id": {img.OwnerID}, "owner-alias": {img.OwnerAlias},
		"state": {img.State}, "architecture": {img.Architecture}, "is-public": {strconv.FormatBool(img.Public)},
		"platform": {platform}, "image-type": {"machine"}, "virtualization-type": {"hvm"}, "root-device-type": {"ebs"},
		"root-device-name": {rootDevice(img)}, "description": {img.Description}, "hypervisor": {"xen"},
		"creation-date": {img.CreationDate.UTC().Format("2006-01-02T15:04:05.000Z")}, "deprecation-time": {dep},
	})
}

func writeImage(b *xb, img *Image) {
	b.open("item")
	b.leafAlways("imageId", img.ID)
	b.leafAlways("imageLocation", img.OwnerID+"/"+img.Name)
	b.leafAlways("imageState", img.State)
	b.leafAlways("imageOwnerId", img.OwnerID)
	b.timestamp("creationDate", img.CreationDate)
	b.boolean("isPublic", img.Public)
	b.leafAlways("architecture", img.Architecture)
	b.leafAlways("imageType", "machine")
	b.leaf("platform", img.Platform)
	if img.Platform == "windows" {
		b.leafAlways("platformDetails", "Windows")
		b.leafAlways("usageOperation", "RunInstances:0002")
	} else {
		b.leafAlways("platformDetails", "Linux/UNIX")
		b.leafAlways("usageOperation", "RunInstances")
	}
	b.leaf("imageOwnerAlias", img.OwnerAlias)
	b.leafAlways("name", img.Name)
	b.leaf("description", img.Description)
	b.leafAlways("rootDeviceType", "ebs")
	b.leafAlways("rootDeviceName", rootDevice(img))
	b.open("blockDeviceMapping")
	b.open("item")
	b.leafAlways("deviceName", rootDevice(img))
	b.open("ebs")
	b.leafAlways("snapshotId", hexID("snap", img.ID))
	size := int64(20)
	if img.Platform == "windows" {
		size = 50
	} else if strings.HasPrefix(img.Name, "bottlerocket-") {
		size = 2
	}
	b.integer("volumeSize", size)
	b.boolean("deleteOnTermination", true)
	b.leafAlways("volumeType", "gp3")
	b.boolean("encrypted", false)
	b.close("ebs")
	b.close("item")
	if strings.HasPrefix(img.Name, "bottlerocket-") {
		b.open("item")
		b.leafAlways("deviceName", "/dev/xvdb")
		b.open("ebs")
		b.leafAlways("snapshotId", hexID("snap", img.ID, "data"))
		b.integer("volumeSize", 20)
		b.boolean("deleteOnTermination", true)
		b.leafAlways("volumeType", "gp3")
		b.boolean("encrypted", false)
		b.close("ebs")
		b.close("item")
	}
	b.close("blockDeviceMapping")
	b.leafAlways("virtualizationType", "hvm")
	b.tagSet("tagSet", "item", "key", "value", img.Tags)
	b.leafAlways("hypervisor", "xen")
	b.boolean("enaSupport", true)
	b.leafAlways("bootMode", "uefi-preferred")
	if !img.DeprecationTime.IsZero() {
		b.leafAlways("deprecationTime", img.DeprecationTime.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	b.close("item")
}
