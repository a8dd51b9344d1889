// Package pricing knows what instance types cost: on-demand prices from the
// AWS Pricing API (GetProducts), spot prices per zone from EC2's
// DescribeSpotPriceHistory, refreshed every 12 hours by Controller.
//
// Until the first refresh, and for good where the Pricing API cannot be
// reached (an isolated VPC, GovCloud), on-demand prices come from a static
// table generated from the instance type facts file (zz_generated.prices.go,
// us-east-1 prices, used for every region), and every zone's spot price is
// the on-demand price. A failed refresh keeps the prices known before.
package pricing
