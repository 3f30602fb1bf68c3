package creative

import (
	"context"

	"github.com/creativegen/creative-go/internal/ops"
)

// UseCase names what the writer tool writes. Any value the service knows
// may be used; the spec shows UseCaseCoverLetter.
type UseCase string

// UseCaseCoverLetter writes cover letters; each input is a CoverLetterInput.
const UseCaseCoverLetter UseCase = ops.UseCaseCoverLetter

// Action names what the writer tool does. Any value the service knows may
// be used; the spec shows ActionGenerateWriteNow.
type Action string

// ActionGenerateWriteNow is the action the spec uses with UseCaseCoverLetter.
const ActionGenerateWriteNow Action = ops.CoverLetterAction

// Tone is the tone of the written text, such as "formal". The spec does not
// list the allowed values.
type Tone string

// Language is the language to write in, such as "English". The spec does
// not list the allowed values.
type Language string

// WriterToolRequest asks the writer tool (POST /text/v1/writer-tool) for
// Number texts. Every field is required but Number, and Action for a cover
// letter.
type WriterToolRequest struct {
	// Inputs are the use case's inputs; for UseCaseCoverLetter each is a
	// CoverLetterInput.
	Inputs []any `json:"inputs"`
	// Language is the language to write in.
	Language Language `json:"language"`
	// Number is how many texts to write, at least 1; 0 means 1.
	Number int `json:"number"`
	// UseCase is what to write.
	UseCase UseCase `json:"useCase"`
	// Action is what to do; left empty for UseCaseCoverLetter, it is
	// ActionGenerateWriteNow.
	Action Action `json:"action"`
	// Tone is the tone of the text.
	Tone Tone `json:"tone"`
}

// CoverLetterInput is one input of the UseCaseCoverLetter use case.
type CoverLetterInput struct {
	// JobRole is the role applied for, such as "Backend engineer".
	JobRole string `json:"jobRole"`
	// JobSkills are the skills to put forward, such as "Go, SQL".
	JobSkills string `json:"jobSkills"`
}

// CoverLetterRequest asks for cover letters with the writer tool: the
// use case, action and input shape are filled in by Client.CoverLetter.
type CoverLetterRequest struct {
	// JobRole is the role applied for (required).
	JobRole string
	// JobSkills are the skills to put forward (required).
	JobSkills string
	// Language is the language to write in (required).
	Language Language
	// Tone is the tone of the letter (required).
	Tone Tone
	// Number is how many letters to write; 0 means 1.
	Number int
}

// writer is the writer tool's request for these cover letters.
func (r CoverLetterRequest) writer() WriterToolRequest {
	return WriterToolRequest{
		Inputs:   []any{CoverLetterInput{JobRole: r.JobRole, JobSkills: r.JobSkills}},
		Language: r.Language,
		Number:   r.Number,
		UseCase:  UseCaseCoverLetter,
		Tone:     r.Tone,
	}
}

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r CoverLetterRequest) Validate() error { return r.writer().Validate() }

// Validate reports the first problem that would make the call fail
// before anything is sent: the *ValidationError the call would return.
func (r WriterToolRequest) Validate() error {
	r = r.filled()
	v := checker{op: ops.WriterTool}
	v.writerInputs(r.UseCase, r.Inputs)
	v.text("language", string(r.Language))
	v.count("number", r.Number, 1, maxInt)
	v.text("useCase", string(r.UseCase))
	v.text("action", string(r.Action))
	v.text("tone", string(r.Tone))
	return v.err()
}

// filled is r with its defaults: one text, and a cover letter's action.
func (r WriterToolRequest) filled() WriterToolRequest {
	r.Number = ops.OrDefault(ops.WriterTool, "number", r.Number)
	r.Action = Action(ops.WriterAction(string(r.UseCase), string(r.Action)))
	return r
}

// WriterTool calls the writer tool: POST /text/v1/writer-tool.
func (c *Client) WriterTool(ctx context.Context, req WriterToolRequest, opts ...Option) (*WriterResult, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return invokeJSON(ctx, c, ops.WriterTool, req.filled(), opts, dataWriter)
}

// CoverLetter writes cover letters through the writer tool, with useCase
// CoverLetter, action generate_writenow and one input built from the job
// role and skills.
func (c *Client) CoverLetter(ctx context.Context, req CoverLetterRequest, opts ...Option) (*WriterResult, error) {
	return c.WriterTool(ctx, req.writer(), opts...)
}
