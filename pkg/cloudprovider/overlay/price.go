package overlay

import (
	"fmt"
	"strconv"
	"strings"
)

// PriceChange is a NodeOverlay's price or priceAdjustment, parsed.
type PriceChange struct {
	// Absolute: the price is Value (spec.price), whatever the provider says.
	Absolute bool
	// Percent: Value is a percentage of the provider's price to add (or, when
	// negative, take away).
	Percent bool
	// Value is the price, the signed amount or the signed percentage.
	Value float64
}

// ParsePriceChange parses spec.price ("0.25") or spec.priceAdjustment
// ("+0.1", "-0.1", "+10%", "-15%"). A value without a sign is an absolute
// price; one with a sign an amount added, or with a trailing "%" a
// percentage.
func ParsePriceChange(s string) (PriceChange, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return PriceChange{}, fmt.Errorf("empty price")
	}
	signed := s[0] == '+' || s[0] == '-'
	pct := strings.HasSuffix(s, "%")
	if !signed && pct {
		return PriceChange{}, fmt.Errorf("price %q: a percentage needs a sign", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return PriceChange{}, fmt.Errorf("price %q is not a number", s)
	}
	if !signed && v < 0 {
		return PriceChange{}, fmt.Errorf("price %q is negative", s)
	}
	return PriceChange{Absolute: !signed, Percent: pct, Value: v}, nil
}

// Apply returns price changed by c, never below zero.
func (c PriceChange) Apply(price float64) float64 {
	var out float64
	switch {
	case c.Absolute:
		out = c.Value
	case c.Percent:
		out = price * (1 + c.Value/100)
	default:
		out = price + c.Value
	}
	if out < 0 {
		return 0
	}
	return out
}

// AdjustedPrice applies a price or priceAdjustment string to price; an empty
// or unparsable change leaves it as it is.
func AdjustedPrice(price float64, change string) float64 {
	c, err := ParsePriceChange(change)
	if err != nil {
		return price
	}
	return c.Apply(price)
}
