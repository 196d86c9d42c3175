/**
 * What `/v1/extract` says about where things are in its text, for citations (issue 24): a PDF's
 * page starts (joinPages), the headings of HTML (marks from the formatter, text-headings.ts) and
 * Markdown (ATX headings), and what the client keeps of them.
 */
import { describe, expect, it } from 'vitest';
import { createAiClient } from '../../src/ai-service/client.ts';
import { joinPages, normaliseText } from '../../src/ai-service/extraction.ts';
import { markdownHeadings, takeHeadingMarks } from '../../src/ai-service/text-headings.ts';
import { fixture, json, serve } from './support.ts';
import { DOCX_TYPE, docx } from '../support/hostile-documents.ts';

describe('joinPages', () => {
  it.each([
    { given: 'two pages', pages: ['one', 'two'], want: { text: 'one\n\ntwo', pageStarts: [0, 5] } },
    { given: 'an empty page between', pages: ['one', '', 'three'], want: { text: 'one\n\n\n\nthree', pageStarts: [0, 5, 7] } },
    { given: 'empty first pages', pages: ['', '', 'three', 'four'], want: { text: 'three\n\nfour', pageStarts: [0, 0, 0, 7] } },
    { given: 'empty last pages', pages: ['one', '', ''], want: { text: 'one', pageStarts: [0, 3, 3] } },
    { given: 'no text at all', pages: ['', ''], want: { text: '', pageStarts: [0, 0] } },
    { given: 'astral characters', pages: ['😀😀', 'ü'], want: { text: '😀😀\n\nü', pageStarts: [0, 6] } },
  ])('joins $given with a blank line and says where each page starts', ({ pages, want }) => {
    const joined = joinPages(pages);
    expect(joined).toEqual(want);
    // The final normalisation leaves the text as it is, so the starts hold in the answer.
    expect(normaliseText(joined.text)).toBe(joined.text);
  });
});

describe('headings', () => {
  it('takes the marks out and says where each heading starts', () => {
    const marked = '\n\uFDD1Title\uFDD0\n\nIntro.\n\n\uFDD2 Part  two \uFDD0\n\nBody.\uFDD3\uFDD0';
    const { text, headings } = takeHeadingMarks(marked);
    expect(text).toBe('Title\n\nIntro.\n\n Part  two \n\nBody.');
    expect(headings).toEqual([
      { start: 0, level: 1, text: 'Title' },
      { start: 15, level: 2, text: 'Part two' },
    ]);
  });

  it.each([
    {
      given: 'ATX headings of every level',
      text: '# One\ntext\n## Two ##\n   ###### Six',
      want: [
        { start: 0, level: 1, text: 'One' },
        { start: 11, level: 2, text: 'Two' },
        { start: 24, level: 6, text: 'Six' },
      ],
    },
    { given: 'a fenced code block', text: '```sh\n# a comment\n```\n# After', want: [{ start: 22, level: 1, text: 'After' }] },
    { given: 'what is not a heading', text: '#hashtag\n####### seven\n    # indented code\n#', want: [] },
  ])('finds $given in Markdown', ({ text, want }) => {
    expect(markdownHeadings(text)).toEqual(want);
  });
});

describe('POST /v1/extract, citations', async () => {
  const service = await serve();
  const extract = async (body: string, contentType: string) => {
    const response = await fetch(`${service.url}/v1/extract`, { method: 'POST', headers: { 'content-type': contentType }, body });
    return json(response);
  };

  it('gives the start of each heading of an HTML document in its final text, a forged mark removed', async () => {
    const html = '<body><h1> Field   <b>guide</b></h1><p>Intro \uFDD2 text.</p><h2>Birds</h2><p>Robins.</p><h3>Owls</h3><p>Barn owls.</p><h2>Trees</h2><p>Oaks.</p></body>';
    const body = await extract(html, 'text/html');
    expect(body.text).toBe('Field guide\n\nIntro text.\n\n\nBirds\n\nRobins.\n\n\nOwls\n\nBarn owls.\n\n\nTrees\n\nOaks.');
    expect(body.headings.map((heading: { level: number; text: string }) => [heading.level, heading.text])).toEqual([
      [1, 'Field guide'],
      [2, 'Birds'],
      [3, 'Owls'],
      [2, 'Trees'],
    ]);
    for (const heading of body.headings) expect(body.text.slice(heading.start, heading.start + heading.text.length)).toBe(heading.text);
  });

  it('gives the start of each heading paragraph of a DOCX document, its text otherwise as mammoth reads it', async () => {
    // docx() writes one paragraph around its text: closing and opening tags in it make several.
    const paragraphs = (items: [string, string | null][]) => items.map(([text, style]) => `<w:p>${style ? `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>` : ''}<w:r><w:t>${text}</w:t></w:r></w:p>`).join('');
    const body = paragraphs([
      ['Intro.', null],
      ['Birds', 'Heading1'],
      ['Robins sing.', null],
      ['Owls', 'Heading2'],
      ['Barn owls.', null],
    ]);
    const bytes = docx(`</w:t></w:r></w:p>${body}<w:p><w:r><w:t>End.`);
    const response = await fetch(`${service.url}/v1/extract`, { method: 'POST', headers: { 'content-type': DOCX_TYPE }, body: bytes as Uint8Array<ArrayBuffer> });
    const answer = await json(response);
    expect(answer.text).toBe('Intro.\n\nBirds\n\nRobins sing.\n\nOwls\n\nBarn owls.\n\nEnd.');
    expect(answer.headings).toEqual([
      { start: 8, level: 1, text: 'Birds' },
      { start: 29, level: 2, text: 'Owls' },
    ]);
  });

  it('gives no headings for a document without any', async () => {
    expect(await extract('<p>Only a paragraph.</p>', 'text/html')).toEqual({ text: 'Only a paragraph.', pages: null, language: 'und' });
  });

  it('passes page starts and headings through the client', async () => {
    const client = createAiClient({ url: service.url });
    const pdf = await client.extract(fixture('report.pdf'), 'application/pdf');
    expect(pdf.pageStarts).toEqual([0, 91]);
    expect(pdf.text.slice(91)).toMatch(/^The solar array/);
    const markdown = await client.extract(Buffer.from('# Notes\n\nBody'), 'text/markdown');
    expect(markdown.headings).toEqual([{ start: 0, level: 1, text: 'Notes' }]);
  });
});
