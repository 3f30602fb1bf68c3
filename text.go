package creative

import (
	"context"

	"github.com/creativegen/creative-go/internal/ops"
)

// UseCase names what the writer tool writes. Any value the service knows
// may be used; the spec shows UseCaseCoverLetter.
type UseCase string

// UseCaseCoverLetter writes cover letters; each input is a CoverLetterInput.
const UseCaseCoverLetter UseCase = "CoverLetter"

// Action names what the writer tool does. Any value the service knows may
// be used; the spec shows ActionGenerateWriteNow.
type Action string

// ActionGenerateWriteNow is the action the spec uses with UseCaseCoverLetter.
const ActionGenerateWriteNow Action = "generate_writenow"

// Tone is the tone of the written text, such as "formal". The spec does not
// list the allowed values.
type Tone string

// Language is the language to write in, such as "English". The spec does
// not list the allowed values.
type Language string

// WriterToolRequest asks the writer tool (POST /text/v1/writer-tool) for
// Number texts. Every field is required.
type WriterToolRequest struct {
	// Inputs are the use case's inputs; for UseCaseCoverLetter each is a
	// CoverLetterInput.
	Inputs []any `json:"inputs"`
	// Language is the language to write in.
	Language Language `json:"language"`
	// Number is how many texts to write, at least 1.
	Number int `json:"number"`
	// UseCase is what to write.
	UseCase UseCase `json:"useCase"`
	// Action is what to do; ActionGenerateWriteNow for cover letters.
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

// WriterTool calls the writer tool: POST /text/v1/writer-tool.
func (c *Client) WriterTool(ctx context.Context, req WriterToolRequest, opts ...Option) (*WriterResult, error) {
	const op = ops.WriterTool
	v := checker{op: op}
	v.writerInputs(req.UseCase, req.Inputs)
	v.text("language", string(req.Language))
	v.count("number", req.Number, 1, maxInt, false)
	v.text("useCase", string(req.UseCase))
	v.text("action", string(req.Action))
	v.text("tone", string(req.Tone))
	if err := v.err(); err != nil {
		return nil, err
	}
	return invokeJSON(ctx, c, op, req, opts, dataWriter)
}

// CoverLetter writes cover letters through the writer tool, with useCase
// CoverLetter, action generate_writenow and one input built from the job
// role and skills.
func (c *Client) CoverLetter(ctx context.Context, req CoverLetterRequest, opts ...Option) (*WriterResult, error) {
	n := req.Number
	if n == 0 {
		n = 1
	}
	return c.WriterTool(ctx, WriterToolRequest{
		Inputs:   []any{CoverLetterInput{JobRole: req.JobRole, JobSkills: req.JobSkills}},
		Language: req.Language,
		Number:   n,
		UseCase:  UseCaseCoverLetter,
		Action:   ActionGenerateWriteNow,
		Tone:     req.Tone,
	}, opts...)
}
