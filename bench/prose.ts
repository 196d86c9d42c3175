/**
 * Deterministic English prose for the indexing and latency benchmarks: grammatical sentences of
 * varied shape and length (a subject, a verb, an object, optional time, place, reason and
 * contrast clauses) over several topics, in paragraphs under Markdown headings. What a sentence
 * model is fed matters for its cost (tokens per chunk) and for the index (vectors spread over
 * topics), so neither a repeated sentence nor a salad of random words will do.
 */

/** A small seeded generator (an LCG is plenty for picking words); the same seed gives the same text. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 4294967296;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  return { next, pick };
}

interface Topic {
  title: string;
  people: string[];
  things: string[];
  verbs: string[];
  places: string[];
  reasons: string[];
}

const TOPICS: Topic[] = [
  {
    title: 'Field operations',
    people: ['the night crew', 'our field engineers', 'the site supervisor', 'two contractors from Leeds', 'the safety officer'],
    things: ['the pump station', 'a cracked valve housing', 'the backup generator', 'the pressure logs', 'every inspection hatch', 'the cooling loop'],
    verbs: ['inspected', 'replaced', 'recalibrated', 'photographed', 'shut down', 'tested'],
    places: ['at the northern reservoir', 'beside the old canal', 'in the east wing', 'on the loading dock', 'under the main bridge'],
    reasons: ['the readings drifted overnight', 'a resident reported a strong smell', 'the warranty expires in June', 'the last audit asked for it'],
  },
  {
    title: 'Finance and planning',
    people: ['the finance committee', 'our new controller', 'the regional managers', 'the external auditors', 'a junior analyst'],
    things: ['the quarterly forecast', 'travel expenses', 'the capital budget', 'three overdue invoices', 'the pricing model', 'the currency exposure'],
    verbs: ['reviewed', 'questioned', 'approved', 'revised', 'postponed', 'summarised'],
    places: ['during the Tuesday meeting', 'in the shared workbook', 'before the board session', 'at the Lisbon office', 'in a short memo'],
    reasons: ['revenue fell short in the spring', 'interest rates rose again', 'a large client paid late', 'the board wants a clearer picture'],
  },
  {
    title: 'Research notes',
    people: ['the lab team', 'a visiting professor', 'our statistician', 'the graduate students', 'the ethics panel'],
    things: ['the sample sizes', 'a surprising correlation', 'the control group', 'the raw measurements', 'an older hypothesis', 'the survey design'],
    verbs: ['examined', 'challenged', 'replicated', 'documented', 'compared', 'discarded'],
    places: ['in the cold room', 'at the spring workshop', 'in the appendix', 'on the shared drive', 'in a draft paper'],
    reasons: ['the first results looked too good', 'a reviewer spotted a gap', 'the funding depends on it', 'nobody had checked the units'],
  },
  {
    title: 'Customer support',
    people: ['the support desk', 'a frustrated customer', 'our onboarding specialist', 'the weekend shift', 'the product owner'],
    things: ['the refund request', 'a confusing error message', 'the login page', 'the help articles', 'a duplicated order', 'the chat transcripts'],
    verbs: ['answered', 'escalated', 'rewrote', 'tracked down', 'closed', 'explained'],
    places: ['within the hour', 'over the phone', 'in the ticket queue', 'on the community forum', 'in the release notes'],
    reasons: ['the same question came up twice a day', 'the old wording scared people', 'a partner complained publicly', 'the deadline was tight'],
  },
  {
    title: 'Gardens and grounds',
    people: ['the head gardener', 'a group of volunteers', 'the neighbours', 'the school children', 'our groundskeeper'],
    things: ['the rose beds', 'a fallen oak', 'the compost heaps', 'the irrigation lines', 'the wildflower meadow', 'the greenhouse glass'],
    verbs: ['pruned', 'cleared', 'watered', 'mapped', 'planted', 'repaired'],
    places: ['near the south gate', 'along the river path', 'behind the chapel', 'in the walled garden', 'by the pond'],
    reasons: ['the frost came early', 'the soil was exhausted', 'the bees need more cover', 'the open day is next month'],
  },
];

const OPENERS = ['Last week', 'On Monday', 'Early this year', 'After the storm', 'By the end of the month', 'Meanwhile', 'In the end', 'At first'];
const ADVERBS = ['carefully', 'quickly', 'quietly', 'once again', 'without much fuss', 'for the first time', 'reluctantly'];
const CONTRASTS = ['but nobody wrote it down', 'although the results were mixed', 'yet the cost stayed within the plan', 'and the change held for weeks', 'while the rest of the team waited'];
const FOLLOW_UPS = [
  'Nobody expected it to take so long.',
  'The next review is already in the calendar.',
  'It is worth repeating the exercise next year.',
  'Several people asked for a written summary.',
  'The figures are in the attached table.',
  'We will come back to this in the next section.',
];

function sentence(random: ReturnType<typeof generator>, topic: Topic): string {
  const parts: string[] = [];
  if (random.next() < 0.3) parts.push(`${random.pick(OPENERS)},`);
  parts.push(random.pick(topic.people));
  if (random.next() < 0.3) parts.push(random.pick(ADVERBS));
  parts.push(random.pick(topic.verbs), random.pick(topic.things));
  if (random.next() < 0.6) parts.push(random.pick(topic.places));
  if (random.next() < 0.45) parts.push(`because ${random.pick(topic.reasons)}`);
  else if (random.next() < 0.35) parts.push(random.pick(CONTRASTS));
  const text = parts.join(' ');
  return `${text[0]!.toUpperCase()}${text.slice(1)}.`;
}

/** A paragraph of 3 to 8 sentences on one topic, now and then with a short follow-up line. */
export function paragraph(random: ReturnType<typeof generator>, topic: Topic): string {
  const sentences = Array.from({ length: 3 + Math.floor(random.next() * 6) }, () => sentence(random, topic));
  if (random.next() < 0.25) sentences.push(random.pick(FOLLOW_UPS));
  return sentences.join(' ');
}

/** About `bytes` of Markdown prose (UTF-8, ASCII only): headed sections, paragraphs, now and then a list. */
export function proseDocument(bytes: number, seed = 2026): string {
  const random = generator(seed);
  const parts: string[] = ['# Operations report'];
  let size = parts[0]!.length;
  for (let section = 1; size < bytes; section++) {
    const topic = random.pick(TOPICS);
    const block = [`## ${section}. ${topic.title}`];
    for (let n = 1 + Math.floor(random.next() * 4); n > 0; n--) {
      block.push(random.next() < 0.15 ? Array.from({ length: 3 + Math.floor(random.next() * 3) }, () => `- ${sentence(random, topic)}`).join('\n') : paragraph(random, topic));
    }
    const text = block.join('\n\n');
    parts.push(text);
    size += text.length + 2;
  }
  return parts.join('\n\n');
}

/** The paragraphs of proseDocument one by one, for callers that wrap them in markup of their own. */
export function* proseParagraphs(seed = 2026): Generator<{ heading: string | null; text: string }, never> {
  const random = generator(seed);
  for (let section = 1; ; section++) {
    const topic = random.pick(TOPICS);
    yield { heading: `${section}. ${topic.title}`, text: paragraph(random, topic) };
    for (let n = Math.floor(random.next() * 3); n > 0; n--) yield { heading: null, text: paragraph(random, topic) };
  }
}

/**
 * A large HTML document of `pages` pages, most of its bytes markup that has no text (as in an
 * exported report or a saved web page): per page a nest of styled frames, a run of empty styled
 * spans, an inline SVG chart, an embedded base64 image and a script, around a paragraph of prose
 * under a heading: about 33 KB of HTML and 600 characters of text a page.
 */
export function largeHtmlDocument(pages: number, seed = 2026): string {
  const paragraphs = proseParagraphs(seed);
  const noise = generator(seed ^ 0x5bd1e995);
  const style = 'margin:0 0 4px 0;padding:2px 6px;font-family:Georgia,serif;font-size:13px;line-height:1.45;color:#222;border-left:1px solid #ccc';
  const image = Buffer.from(Array.from({ length: 9000 }, () => Math.floor(noise.next() * 256))).toString('base64');
  const parts = ['<!doctype html><html><head><meta charset="utf-8"><title>Operations report</title><style>.page{break-after:page}</style></head><body>'];
  for (let page = 1; page <= pages; page++) {
    parts.push(`<div class="page" id="page-${page}" data-page="${page}">`, `<div class="frame" style="${style}">`.repeat(8));
    for (let span = 0; span < 120; span++) parts.push(`<span class="c${span} t${page % 7}" style="${style}" data-k="${Math.floor(noise.next() * 1e9)}"></span>`);
    parts.push('<svg width="600" height="120" viewBox="0 0 600 120">');
    for (let path = 0; path < 50; path++) {
      const points = Array.from({ length: 12 }, (_, i) => `${i * 50},${Math.floor(noise.next() * 120)}`).join(' L');
      parts.push(`<path d="M${points}" stroke="#36c" fill="none" stroke-width="1.5"/>`);
    }
    parts.push('</svg>', `<img alt="" src="data:image/png;base64,${image}">`, `<script>window.pageMeta=${JSON.stringify({ page, seed: noise.next() })}</script>`);
    const { heading, text } = paragraphs.next().value;
    parts.push(heading ? `<h2>${heading}</h2>` : `<h3>Page ${page}</h3>`, `<p>${text}</p>`);
    parts.push('</div>'.repeat(8), '</div>');
  }
  parts.push('</body></html>');
  return parts.join('');
}
