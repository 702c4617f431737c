package providers

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// PDF is the media type of PDF documents.
const PDF = "application/pdf"

// ImageTypes are the image media types the providers take: PNG, JPEG, GIF and WebP.
var ImageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// File is an image or a PDF shown to the model: its bytes, or a URL the provider fetches it from.
// Exactly one of Data and URL is set.
type File struct {
	// MediaType is the file's type: one of ImageTypes, or PDF.
	MediaType string `json:"media_type"`
	// Name names the file in errors and, where the API takes a name, to the model.
	Name string `json:"name,omitempty"`
	Data []byte `json:"data,omitempty"`
	URL  string `json:"url,omitempty"`
}

// FileData makes a part of a file's bytes.
func FileData(mediaType, name string, data []byte) Part {
	return Part{Type: FilePart, File: &File{MediaType: mediaType, Name: name, Data: data}}
}

// FileURL makes a part of a file the provider fetches from url.
func FileURL(mediaType, url string) Part {
	return Part{Type: FilePart, File: &File{MediaType: mediaType, URL: url}}
}

// IsImage reports whether f is an image of one of ImageTypes.
func (f *File) IsImage() bool { return slices.Contains(ImageTypes, f.MediaType) }

// DataURL returns f's bytes as a data URL ("data:image/png;base64,…").
func (f *File) DataURL() string {
	return "data:" + f.MediaType + ";base64," + base64.StdEncoding.EncodeToString(f.Data)
}

// label names f in messages: its name, else its URL, else its type and size.
func (f *File) label() string {
	switch {
	case f.Name != "":
		return f.Name
	case f.URL != "":
		return f.URL
	}
	return fmt.Sprintf("a %d-byte %s file", len(f.Data), f.MediaType)
}

// FileError is the cause (Error.Err) of the error of a file part that a model cannot take, as
// FileLimits.Check makes it: a caller can show the model something else in its place.
type FileError struct {
	Name      string // the file's name (else its URL, else its type and size)
	MediaType string
	Reason    string // what is wrong, naming the file
}

func (e *FileError) Error() string { return e.Reason }

// FileLimits says which files a provider's API takes, and how large: an adapter checks each file
// part with Check before it sends a request.
type FileLimits struct {
	Images, PDFs bool // the file types taken
	// ImageURLs and PDFURLs say the API fetches files of that type from a URL; otherwise it
	// takes their bytes only.
	ImageURLs, PDFURLs bool
	// MaxImage and MaxPDF bound the bytes of one file (0: no bound).
	MaxImage, MaxPDF int
}

// Check returns nil when the API takes f, and otherwise an *Error of kind ErrBadRequest for
// provider and model, caused by a *FileError, that names the file and says what is wrong: a part without a file, a file
// with neither or both of Data and URL, a URL that is not http(s), a media type the model cannot
// take, a URL where only bytes are taken, or a file over the size limit.
func (l FileLimits) Check(provider, model string, f *File) error {
	if f == nil {
		return &Error{Provider: provider, Model: model, Kind: ErrBadRequest, Message: "a file part holds no file"}
	}
	fail := func(format string, args ...any) error {
		return &Error{Provider: provider, Model: model, Kind: ErrBadRequest,
			Err: &FileError{Name: f.label(), MediaType: f.MediaType, Reason: fmt.Sprintf(format, args...)}}
	}
	if (len(f.Data) == 0) == (f.URL == "") {
		return fail("file %s must have either its data or a URL, not both nor neither", f.label())
	}
	if f.URL != "" {
		if u, err := url.Parse(f.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fail("file %s: the URL must be http or https", f.label())
		}
	}
	image, pdf := f.IsImage(), f.MediaType == PDF
	switch {
	case image && l.Images, pdf && l.PDFs:
	default:
		return fail("the model cannot take %s files (%s); it takes %s", orNone(f.MediaType), f.label(), l.takes())
	}
	limit := l.MaxPDF
	if image {
		limit = l.MaxImage
	}
	switch {
	case f.URL != "" && !(image && l.ImageURLs || pdf && l.PDFURLs):
		return fail("the model cannot fetch %s files from a URL (%s); send the file's data", f.MediaType, f.label())
	case limit > 0 && len(f.Data) > limit:
		return fail("file %s is %d bytes, over the %d bytes the model takes for a %s file", f.label(), len(f.Data), limit, f.MediaType)
	}
	return nil
}

// CheckMessages checks the file parts of msgs with Check, and returns the first error.
func (l FileLimits) CheckMessages(provider, model string, msgs []Message) error {
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type != FilePart {
				continue
			}
			if err := l.Check(provider, model, p.File); err != nil {
				return err
			}
		}
	}
	return nil
}

// takes describes the file types of l.
func (l FileLimits) takes() string {
	var types []string
	if l.Images {
		types = append(types, ImageTypes...)
	}
	if l.PDFs {
		types = append(types, PDF)
	}
	if len(types) == 0 {
		return "no files, only text"
	}
	return strings.Join(types, ", ")
}

func orNone(mediaType string) string {
	if mediaType == "" {
		return "untyped"
	}
	return mediaType
}
