package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// bar is one bar of a chart: its label under it, its value, and a note
// written above it.
type bar struct {
	label string
	value float64
	note  string
}

// writeChart draws bars as a PNG bar chart titled title, the value axis
// in unit from zero to the largest value.
func writeChart(w io.Writer, title, unit string, bars []bar) error {
	const (
		width, height      = 960, 440
		left, right        = 70, 20
		top, bottom        = 50, 70
		plotW, plotH       = width - left - right, height - top - bottom
		gridLines          = 5
		barFill, barMargin = 0.6, 0.2
	)
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	ink := color.RGBA{0x22, 0x22, 0x22, 0xff}
	grid := color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	blue := color.RGBA{0x3a, 0x6e, 0xa5, 0xff}
	text := func(x, y int, s string, c color.Color) {
		d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
		d.DrawString(s)
	}
	centred := func(cx, y int, s string, c color.Color) { text(cx-len(s)*7/2, y, s, c) }
	fill := func(r image.Rectangle, c color.Color) {
		draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
	}

	top1 := 0.0
	for _, b := range bars {
		top1 = max(top1, b.value)
	}
	top1 = niceCeiling(top1)
	text(left, 25, title, ink)
	for i := 0; i <= gridLines; i++ {
		v := top1 * float64(i) / gridLines
		y := top + plotH - int(float64(plotH)*float64(i)/gridLines)
		fill(image.Rect(left, y, left+plotW, y+1), grid)
		label := fmt.Sprintf("%.0fk", v/1000)
		text(left-8-len(label)*7, y+4, label, ink)
	}
	text(5, top-15, unit, ink)
	slot := float64(plotW) / float64(max(len(bars), 1))
	for i, b := range bars {
		x0 := left + int(slot*(float64(i)+barMargin))
		x1 := x0 + int(slot*barFill)
		h := int(float64(plotH) * b.value / top1)
		fill(image.Rect(x0, top+plotH-h, x1, top+plotH), blue)
		cx := (x0 + x1) / 2
		centred(cx, top+plotH-h-6, b.note, ink)
		centred(cx, top+plotH+20, b.label, ink)
		centred(cx, top+plotH+36, fmt.Sprintf("%.0f/s", b.value), ink)
	}
	fill(image.Rect(left, top+plotH, left+plotW, top+plotH+1), ink)
	return png.Encode(w, img)
}

// niceCeiling rounds v up to a multiple of half a power of ten (50,000 for
// 49,310), so that the chart's grid lines fall on round numbers.
func niceCeiling(v float64) float64 {
	if v <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	return math.Ceil(v/mag*2) / 2 * mag
}
