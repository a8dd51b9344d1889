package awsemulator

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// pricingOps is the Pricing operation table (AWS JSON 1.1, X-Amz-Target AWSPriceListService.<Op>).
func pricingOps() map[string]handler {
	return map[string]handler{
		"GetProducts": pricingGetProducts,
	}
}

// regionNames are the price list's "location" values.
var regionNames = map[string]string{
	"us-east-1": "US East (N. Virginia)", "us-east-2": "US East (Ohio)", "us-west-1": "US West (N. California)",
	"us-west-2": "US West (Oregon)", "eu-west-1": "EU (Ireland)", "eu-central-1": "EU (Frankfurt)",
	"eu-west-2": "EU (London)", "eu-north-1": "EU (Stockholm)", "ap-south-1": "Asia Pacific (Mumbai)",
	"ap-northeast-1": "Asia Pacific (Tokyo)", "ap-southeast-1": "Asia Pacific (Singapore)",
	"ap-southeast-2": "Asia Pacific (Sydney)", "ca-central-1": "Canada (Central)", "sa-east-1": "South America (Sao Paulo)",
}

// priceItem is one product of the price list: the attributes filters match against
// (product attributes plus productFamily and serviceCode) and the JSON document served.
type priceItem struct {
	attrs map[string]string
	doc   string
}

func formatPrice(v float64, decimals int) string { return strconv.FormatFloat(v, 'f', decimals, 64) }

// priceItems builds (once per emulator) the EC2 on-demand Linux price list of the region.
func (s *state) priceItems() []priceItem {
	if s.pricing != nil {
		return s.pricing
	}
	location := regionNames[s.opts.Region]
	if location == "" {
		location = s.opts.Region
	}
	prefix := strings.ToUpper(zoneIDPrefix(s.opts.Region))
	for _, it := range s.instanceTypes {
		if it.onDemandUSD <= 0 {
			continue
		}
		for _, v := range priceVariants(it) {
			s.pricing = append(s.pricing, priceItemOf(s.opts.Region, location, prefix, it, v))
		}
	}
	return s.pricing
}

// priceVariant is one product of an instance type in the price list.
type priceVariant struct {
	family, tenancy, usagePrefix string
	usd                          float64
}

// DedicatedPremium is how much more the emulator's price list asks for a
// Dedicated Instance than for the same type on shared hardware (the
// emulator's figure, not AWS's).
const DedicatedPremium = 1.1

// priceVariants are the products of a type, as the price list files them:
// bare-metal types once, as family "Compute Instance (bare metal)" with tenancy
// Dedicated (they are single-tenant); other types as "Compute Instance" with
// tenancy Shared and again with tenancy Dedicated, at DedicatedPremium.
func priceVariants(it *instanceType) []priceVariant {
	if size := it.name[strings.Index(it.name, ".")+1:]; strings.HasPrefix(size, "metal") {
		return []priceVariant{{"Compute Instance (bare metal)", "Dedicated", "-DedicatedUsage:", it.onDemandUSD}}
	}
	return []priceVariant{
		{"Compute Instance", "Shared", "-BoxUsage:", it.onDemandUSD},
		{"Compute Instance", "Dedicated", "-DedicatedUsage:", math.Round(it.onDemandUSD*DedicatedPremium*1e6) / 1e6},
	}
}

func priceItemOf(region, location, prefix string, it *instanceType, v priceVariant) priceItem {
	sku := strings.ToUpper(upperID("", "sku", region, it.name, v.tenancy)[:16])
	if v.tenancy == "Shared" {
		sku = strings.ToUpper(upperID("", "sku", region, it.name)[:16]) // as before dedicated products were listed
	}
	attrs := map[string]string{
		"servicecode": "AmazonEC2", "instanceType": it.name, "regionCode": region, "location": location,
		"locationType": "AWS Region", "operatingSystem": "Linux", "preInstalledSw": "NA", "capacitystatus": "Used",
		"tenancy": v.tenancy, "marketoption": "OnDemand", "licenseModel": "No License required",
		"operation": "RunInstances", "usagetype": prefix + v.usagePrefix + it.name,
		"vcpu": strconv.Itoa(it.vcpu), "memory": strconv.FormatFloat(float64(it.memoryMiB)/1024, 'f', -1, 64) + " GiB",
		"instanceFamily": "General purpose", "currentGeneration": "Yes", "servicename": "Amazon Elastic Compute Cloud",
	}
	const offer, rate = "JRTCKXETXF", "6YS6EN2CT7"
	doc := map[string]any{
		"product": map[string]any{
			"productFamily": v.family,
			"attributes":    attrs,
			"sku":           sku,
		},
		"serviceCode": "AmazonEC2",
		"terms": map[string]any{
			"OnDemand": map[string]any{
				sku + "." + offer: map[string]any{
					"priceDimensions": map[string]any{
						sku + "." + offer + "." + rate: map[string]any{
							"unit":         "Hrs",
							"endRange":     "Inf",
							"description":  fmt.Sprintf("$%s per On Demand Linux %s Instance Hour", formatPrice(v.usd, 4), it.name),
							"appliesTo":    []string{},
							"rateCode":     sku + "." + offer + "." + rate,
							"beginRange":   "0",
							"pricePerUnit": map[string]string{"USD": formatPrice(v.usd, 10)},
						},
					},
					"sku":            sku,
					"effectiveDate":  "2025-11-01T00:00:00Z",
					"offerTermCode":  offer,
					"termAttributes": map[string]string{},
				},
			},
		},
		"version":         "20251115000000",
		"publicationDate": "2025-11-15T00:00:00Z",
	}
	b, _ := json.Marshal(doc)
	match := cloneTags(attrs)
	match["productFamily"] = v.family
	match["serviceCode"] = "AmazonEC2"
	return priceItem{attrs: match, doc: string(b)}
}

type pricingFilter struct{ Type, Field, Value string }

func (f pricingFilter) matches(attrs map[string]string) bool {
	var have string
	found := false
	for k, v := range attrs {
		if strings.EqualFold(k, f.Field) {
			have, found = v, true
			break
		}
	}
	switch f.Type {
	case "TERM_MATCH", "EQUALS":
		return found && strings.EqualFold(have, f.Value)
	case "CONTAINS":
		return found && strings.Contains(strings.ToLower(have), strings.ToLower(f.Value))
	case "ANY_OF", "NONE_OF":
		any := false
		for _, v := range strings.Split(f.Value, ",") {
			any = any || (found && strings.EqualFold(have, strings.TrimSpace(v)))
		}
		return any == (f.Type == "ANY_OF")
	}
	return false
}

// pricingGetProducts: ServiceCode AmazonEC2 (others have no products here), filters,
// MaxResults (1..100, default 100) and NextToken.
func pricingGetProducts(c *call) (any, error) {
	var in struct {
		ServiceCode   string
		Filters       []pricingFilter
		FormatVersion string
		MaxResults    *int
		NextToken     string
	}
	if err := decodeJSON(c, &in); err != nil {
		return nil, err
	}
	if in.ServiceCode == "" {
		return nil, errorf(400, "InvalidParameterException", "ServiceCode is required")
	}
	for _, f := range in.Filters {
		switch f.Type {
		case "TERM_MATCH", "EQUALS", "CONTAINS", "ANY_OF", "NONE_OF":
		default:
			return nil, errorf(400, "InvalidParameterException", "Invalid filter type %q", f.Type)
		}
	}
	limit := 100
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > 100 {
			return nil, errorf(400, "InvalidParameterException", "MaxResults must be between 1 and 100")
		}
		limit = *in.MaxResults
	}
	var docs []string
	if in.ServiceCode == "AmazonEC2" {
		c.e.locked(func(s *state) {
			for _, item := range s.priceItems() {
				ok := true
				for _, f := range in.Filters {
					ok = ok && f.matches(item.attrs)
				}
				if ok {
					docs = append(docs, item.doc)
				}
			}
		})
	}
	offset := 0
	if in.NextToken != "" {
		raw, err := base64.RawURLEncoding.DecodeString(in.NextToken)
		n, convErr := strconv.Atoi(strings.TrimPrefix(string(raw), "pricing:"))
		if err != nil || convErr != nil || n < 0 || n > len(docs) {
			return nil, errorf(400, "InvalidNextTokenException", "The nextToken provided is invalid")
		}
		offset = n
	}
	out := map[string]any{"FormatVersion": "aws_v1"}
	end := min(len(docs), offset+limit)
	out["PriceList"] = append([]string{}, docs[offset:end]...)
	if end < len(docs) {
		out["NextToken"] = base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("pricing:%d", end)))
	}
	return out, nil
}
