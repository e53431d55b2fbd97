package kai_test

import (
	"errors"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/kai"
)

func TestParseFraction(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want float64
		ok   bool
	}{
		{name: "two places", in: "0.25", want: 0.25, ok: true},
		{name: "no leading zero", in: ".5", want: 0.5, ok: true},
		{name: "more places", in: "0.333", want: 0.333, ok: true},
		{name: "empty", in: ""},
		{name: "leading blank", in: " 0.5"},
		{name: "trailing blank", in: "0.5 "},
		{name: "hex float", in: "0x1p-1"},
		{name: "exponent, as KAI's webhook takes it", in: "5e-1", want: 0.5, ok: true},
		{name: "capital exponent", in: "25E-2", want: 0.25, ok: true},
		{name: "sign, as KAI's webhook takes it", in: "+0.5", want: 0.5, ok: true},
		{name: "a quantity's suffix", in: "500m"},
		{name: "underscore", in: "0.5_0"},
		{name: "zero", in: "0"},
		{name: "one", in: "1"},
		{name: "one point zero", in: "1.0"},
		{name: "dot", in: "."},
		{name: "two dots", in: "0.5.1"},
		{name: "NaN", in: "NaN"},
		{name: "Inf", in: "Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := kai.ParseFraction(tt.in)
			if tt.ok {
				if err != nil || got != tt.want {
					t.Fatalf("ParseFraction(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, kai.ErrFraction) {
				t.Fatalf("ParseFraction(%q) = %v, %v; want an ErrFraction", tt.in, got, err)
			}
		})
	}
}

func TestGrid(t *testing.T) {
	tests := []struct {
		name       string
		in         float64
		ceil, flor float64
	}{
		{name: "on the grid despite float error", in: 0.29, ceil: 0.29, flor: 0.29},
		{name: "product with float error", in: 0.6 * 1.2, ceil: 0.72, flor: 0.72},
		{name: "between steps", in: 0.315, ceil: 0.32, flor: 0.31},
		{name: "just above a step", in: 0.3000001, ceil: 0.31, flor: 0.30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kai.CeilFraction(tt.in); !kai.Same(got, tt.ceil) {
				t.Errorf("CeilFraction(%v) = %v, want %v", tt.in, got, tt.ceil)
			}
			if got := kai.FloorFraction(tt.in); !kai.Same(got, tt.flor) {
				t.Errorf("FloorFraction(%v) = %v, want %v", tt.in, got, tt.flor)
			}
		})
	}
	for _, v := range []float64{0.01, 0.29, 0.99, 1, 2, 64} {
		if !kai.OnGrid(v) {
			t.Errorf("OnGrid(%v) = false", v)
		}
	}
	for _, v := range []float64{0.005, 0.315, 1.5} {
		if kai.OnGrid(v) {
			t.Errorf("OnGrid(%v) = true", v)
		}
	}
	if kai.CeilGPUs(1.0000000001) != 1 || kai.CeilGPUs(1.01) != 2 || kai.FloorGPUs(1.9999999999) != 2 {
		t.Error("whole-GPU rounding does not absorb float error")
	}
}

func TestRequestConflict(t *testing.T) {
	tests := []struct {
		name string
		r    kai.Request
		bad  bool
	}{
		{name: "fraction alone", r: kai.Request{Fraction: true}},
		{name: "whole GPUs alone", r: kai.Request{WholeGPUs: true}},
		{name: "memory alone", r: kai.Request{Memory: true}},
		{name: "fraction and memory", r: kai.Request{Fraction: true, Memory: true}, bad: true},
		{name: "fraction and whole", r: kai.Request{Fraction: true, WholeGPUs: true}, bad: true},
		{name: "memory and whole", r: kai.Request{Memory: true, WholeGPUs: true}, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Conflict(); (got != nil) != tt.bad {
				t.Fatalf("Conflict() = %v, want conflict %v", got, tt.bad)
			}
		})
	}
}
