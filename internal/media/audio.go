package media

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/hajimehoshi/go-mp3"

	"github.com/creativegen/creative-go/internal/sniff"
)

// SniffAudio tells an audio file's type from its first bytes:
// "audio/wav", "audio/mpeg" or "".
func SniffAudio(b []byte) string {
	switch ct := sniff.Type(b); ct {
	case "audio/wav", "audio/mpeg":
		return ct
	}
	return ""
}

// MP3 frames made by Speech: MPEG-1 Layer III, 48 kHz, 32 kbit/s, mono, so
// that every frame is exactly 96 bytes and lasts 1152 samples (24 ms).
const (
	mp3Rate       = 48000
	mp3FrameBytes = 96
	mp3Samples    = 1152
	framesPerChar = 3
)

// Speech makes an MP3 whose length grows with the text: three frames
// (72 ms) per character, at least half a second. Letters sound as a tone
// whose pitch comes from the letter and the voice (female voices higher);
// spaces and punctuation are silent.
func Speech(text, voiceID string) []byte {
	s := newSeed("voice", voiceID)
	base := 4 + s.intn(3) // spectral line: about 42 Hz apart
	var chars []rune
	for _, r := range text {
		chars = append(chars, r)
	}
	frames := max(len(chars)*framesPerChar, mp3Rate/2/mp3Samples+1)
	out := make([]byte, 0, frames*mp3FrameBytes)
	for i := 0; i < frames; i++ {
		line := -1
		if c := i / framesPerChar; c < len(chars) {
			r := chars[c]
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 127 {
				line = base + int(r%7)
			}
		}
		out = append(out, mp3Frame(line)...)
	}
	return out
}

// bitWriter writes bits most significant first.
type bitWriter struct {
	buf  []byte
	nbit int
}

func (w *bitWriter) put(v uint32, n int) {
	for i := n - 1; i >= 0; i-- {
		if w.nbit%8 == 0 {
			w.buf = append(w.buf, 0)
		}
		if v>>uint(i)&1 == 1 {
			w.buf[len(w.buf)-1] |= 0x80 >> uint(w.nbit%8)
		}
		w.nbit++
	}
}

// mp3Frame encodes one frame whose two granules hold a single spectral line
// (or silence when line < 0), with Huffman table 1, no scale factors and no
// bit reservoir.
func mp3Frame(line int) []byte {
	// Main data of one granule: big_values pairs coded with table 1, where
	// (0,0) is "1", (1,0) is "01" and (0,1) is "001", each nonzero value
	// followed by its sign bit (0: positive).
	var gran bitWriter
	bigValues := 0
	if line >= 0 {
		bigValues = line/2 + 1
		for p := 0; p < line/2; p++ {
			gran.put(1, 1)
		}
		if line%2 == 0 {
			gran.put(0b01, 2)
		} else {
			gran.put(0b001, 3)
		}
		gran.put(0, 1)
	}
	var w bitWriter
	// Header: sync, MPEG-1, layer III, no CRC; 32 kbit/s, 48 kHz, no
	// padding; mono, original.
	w.put(0xFFFB, 16)
	w.put(0b0001, 4)
	w.put(0b01, 2)
	w.put(0, 2)
	w.put(0b11, 2)
	w.put(0, 2)
	w.put(0, 1)
	w.put(1, 1)
	w.put(0, 2)
	// Side information (mono: 17 bytes).
	w.put(0, 9) // main_data_begin
	w.put(0, 5) // private bits
	w.put(0, 4) // scfsi
	for g := 0; g < 2; g++ {
		w.put(uint32(gran.nbit), 12) // part2_3_length
		w.put(uint32(bigValues), 9)
		w.put(200, 8) // global_gain: a moderate level
		w.put(0, 4)   // scalefac_compress: no scale factors
		w.put(0, 1)   // window_switching_flag: long blocks
		w.put(1, 5)   // table_select[0..2]: table 1
		w.put(1, 5)
		w.put(1, 5)
		w.put(7, 4) // region0_count
		w.put(7, 3) // region1_count
		w.put(0, 1) // preflag
		w.put(0, 1) // scalefac_scale
		w.put(0, 1) // count1table_select
	}
	for g := 0; g < 2; g++ {
		for i := 0; i < gran.nbit; i++ {
			w.put(uint32(gran.buf[i/8]>>(7-uint(i%8))&1), 1)
		}
	}
	frame := make([]byte, mp3FrameBytes)
	copy(frame, w.buf)
	return frame
}

// WAV files made here: 16-bit PCM at 22050 Hz.
const wavRate = 22050

// Music makes a WAV of exactly seconds (0 means 8) of a melody: notes of a
// pentatonic scale chosen from the prompt, each with an attack and decay.
func Music(prompt string, seconds float64) []byte {
	if seconds <= 0 {
		seconds = 8
	}
	n := int(math.Round(seconds * wavRate))
	s := newSeed("music", prompt)
	scale := []float64{0, 2, 4, 7, 9, 12}
	root := 220 * math.Pow(2, float64(s.intn(12))/12)
	noteLen := wavRate / 4 * (1 + s.intn(2))
	samples := make([]int16, n)
	freq := root
	for i := range samples {
		pos := i % noteLen
		if pos == 0 {
			freq = root * math.Pow(2, scale[s.intn(len(scale))]/12)
		}
		t := float64(i) / wavRate
		env := math.Min(1, float64(pos)/200) * math.Exp(-3*float64(pos)/float64(noteLen))
		v := 0.5*math.Sin(2*math.Pi*freq*t) + 0.15*math.Sin(4*math.Pi*freq*t)
		samples[i] = int16(env * v * 0.8 * math.MaxInt16)
	}
	return WAV(samples, wavRate)
}

// WAV encodes mono 16-bit PCM samples as a WAV file.
func WAV(samples []int16, rate int) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	b.WriteString("RIFF")
	_ = binary.Write(&b, le, uint32(36+2*len(samples)))
	b.WriteString("WAVEfmt ")
	_ = binary.Write(&b, le, struct {
		Size                      uint32
		Format, Channels          uint16
		Rate, ByteRate            uint32
		BlockAlign, BitsPerSample uint16
	}{16, 1, 1, uint32(rate), uint32(2 * rate), 2, 16})
	b.WriteString("data")
	_ = binary.Write(&b, le, uint32(2*len(samples)))
	_ = binary.Write(&b, le, samples)
	return b.Bytes()
}

// PCM is decoded audio: mono 16-bit samples and their rate.
type PCM struct {
	Samples []int16
	Rate    int
}

// Duration is the audio's length in seconds.
func (p PCM) Duration() float64 { return float64(len(p.Samples)) / float64(p.Rate) }

// ReadAudio decodes a 16-bit PCM WAV (any channel count, mixed to mono) or
// an MP3.
func ReadAudio(b []byte) (PCM, error) {
	switch SniffAudio(b) {
	case "audio/wav":
		return readWAV(b)
	case "audio/mpeg":
		d, err := mp3.NewDecoder(bytes.NewReader(b))
		if err != nil {
			return PCM{}, fmt.Errorf("media: mp3: %w", err)
		}
		raw, err := io.ReadAll(d)
		if err != nil {
			return PCM{}, fmt.Errorf("media: mp3: %w", err)
		}
		out := make([]int16, len(raw)/4) // go-mp3 gives 16-bit stereo
		for i := range out {
			l := int16(binary.LittleEndian.Uint16(raw[4*i:]))
			r := int16(binary.LittleEndian.Uint16(raw[4*i+2:]))
			out[i] = int16((int(l) + int(r)) / 2)
		}
		return PCM{Samples: out, Rate: d.SampleRate()}, nil
	}
	return PCM{}, errors.New("media: unsupported audio format (want WAV or MP3)")
}

func readWAV(b []byte) (PCM, error) {
	le := binary.LittleEndian
	var channels, bits, rate int
	for off := 12; off+8 <= len(b); {
		id, size := string(b[off:off+4]), int(le.Uint32(b[off+4:]))
		body := b[off+8:]
		if size > len(body) {
			size = len(body)
		}
		switch id {
		case "fmt ":
			if size < 16 || le.Uint16(body) != 1 {
				return PCM{}, errors.New("media: wav: only PCM is supported")
			}
			channels, rate, bits = int(le.Uint16(body[2:])), int(le.Uint32(body[4:])), int(le.Uint16(body[14:]))
		case "data":
			if bits != 16 || channels < 1 || rate < 1 {
				return PCM{}, errors.New("media: wav: only 16-bit PCM is supported")
			}
			frames := size / (2 * channels)
			out := make([]int16, frames)
			for i := range out {
				sum := 0
				for c := 0; c < channels; c++ {
					sum += int(int16(le.Uint16(body[2*(i*channels+c):])))
				}
				out[i] = int16(sum / channels)
			}
			return PCM{Samples: out, Rate: rate}, nil
		}
		off += 8 + size + size%2
	}
	return PCM{}, errors.New("media: wav: no data chunk")
}

// EnhanceAudio returns a normalized copy of a WAV or MP3: the peak is
// raised (or lowered) to -1 dBFS, as a WAV.
func EnhanceAudio(b []byte) ([]byte, string, error) {
	pcm, err := ReadAudio(b)
	if err != nil {
		return nil, "", err
	}
	peak := 0.0
	for _, v := range pcm.Samples {
		peak = math.Max(peak, math.Abs(float64(v)))
	}
	gain := 1.0
	if peak > 0 {
		gain = math.Pow(10, -1.0/20) * math.MaxInt16 / peak
	}
	out := make([]int16, len(pcm.Samples))
	for i, v := range pcm.Samples {
		out[i] = int16(math.Max(math.MinInt16, math.Min(math.MaxInt16, math.Round(float64(v)*gain))))
	}
	return WAV(out, pcm.Rate), "audio/wav", nil
}

// SplitAudio splits a WAV or MP3 into two WAVs of the same length: the band
// below about 500 Hz, and the rest.
func SplitAudio(b []byte) ([][]byte, error) {
	pcm, err := ReadAudio(b)
	if err != nil {
		return nil, err
	}
	alpha := 1 - math.Exp(-2*math.Pi*500/float64(pcm.Rate))
	low := make([]int16, len(pcm.Samples))
	high := make([]int16, len(pcm.Samples))
	y := 0.0
	for i, v := range pcm.Samples {
		y += alpha * (float64(v) - y)
		low[i] = int16(math.Round(y))
		high[i] = int16(math.Max(math.MinInt16, math.Min(math.MaxInt16, float64(v)-math.Round(y))))
	}
	return [][]byte{WAV(low, pcm.Rate), WAV(high, pcm.Rate)}, nil
}
