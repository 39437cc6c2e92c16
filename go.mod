module github.com/wonderful-matrices/wonderful-matrices-go

go 1.26

require (
	github.com/chewxy/hm v1.0.0
	github.com/chromedp/chromedp v0.23.0
	github.com/pkg/errors v0.9.1
	gonum.org/v1/gonum v0.14.0
	gonum.org/v1/netlib v0.0.0-20220323200511-14de99971b2d
	gonum.org/v1/plot v0.14.0
	gorgonia.org/gorgonia v0.9.18
	gorgonia.org/tensor v0.9.23
)

require (
	git.sr.ht/~sbinet/gg v0.5.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/apache/arrow/go/arrow v0.0.0-20211112161151-bc219186db40 // indirect
	github.com/awalterschulze/gographviz v2.0.3+incompatible // indirect
	github.com/campoy/embedmd v1.0.0 // indirect
	github.com/chewxy/math32 v1.10.1 // indirect
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-fonts/liberation v0.3.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/go-latex/latex v0.0.0-20230307184459-12ec69307ad9 // indirect
	github.com/go-pdf/fpdf v0.8.0 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/golang/protobuf v1.5.2 // indirect
	github.com/google/flatbuffers v2.0.6+incompatible // indirect
	github.com/google/uuid v1.3.0 // indirect
	github.com/leesper/go_rng v0.0.0-20190531154944-a612b043e353 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/xtgo/set v1.0.0 // indirect
	golang.org/x/exp v0.0.0-20230801115018-d63ba01acd4b // indirect
	golang.org/x/image v0.11.0 // indirect
	golang.org/x/text v0.12.0 // indirect
	golang.org/x/xerrors v0.0.0-20200804184101-5ec99f83aff1 // indirect
	google.golang.org/protobuf v1.28.0 // indirect
	gorgonia.org/cu v0.9.4 // indirect
	gorgonia.org/dawson v1.2.0 // indirect
	gorgonia.org/vecf32 v0.9.0 // indirect
	gorgonia.org/vecf64 v0.9.0 // indirect
)

// Gorgonia v0.9.18 panics at start-up on this Go unless assume-no-moving-gc
// is at least this version (GORGONIA-NOTES.md): keep the pin.
require go4.org/unsafe/assume-no-moving-gc v0.0.0-20231121144256-b99613f794b6 // indirect
