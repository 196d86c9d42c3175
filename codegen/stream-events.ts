/** An event-stream procedure's messages: each event name and the component schema of its message. */
import { deref, type Json } from './deref.ts';

/** The component that names each message of an event stream: `#/components/schemas/<Name>`. */
const COMPONENT = /^#\/components\/schemas\/([^/]+)$/;

/**
 * The events of an event-stream answer: its schema must be a `oneOf` (directly or through one
 * $ref) of component refs, each an object whose `event` is a `const`, with a `data` property and
 * at most an `id` besides. Answers `{ <event>: <component> }`; a discriminator mapping, when
 * present, must say the same.
 */
export function streamEvents(doc: Json, name: string, schema: Json | undefined): Record<string, string> {
  const union = schema && deref(doc, schema);
  if (!Array.isArray(union?.oneOf)) throw new Error(`${name}: a text/event-stream answer must be a oneOf of message components`);
  const events: Record<string, string> = {};
  for (const branch of union.oneOf) {
    const component = typeof branch.$ref === 'string' ? COMPONENT.exec(branch.$ref)?.[1] : undefined;
    if (!component) throw new Error(`${name}: each event of the stream must be a $ref to a component schema`);
    const message = deref(doc, branch);
    const event = message.properties?.event?.const;
    if (message.type !== 'object' || typeof event !== 'string') throw new Error(`${name}: ${component} must be an object whose event is a const`);
    if (!message.properties?.data || !(message.required ?? []).includes('data')) throw new Error(`${name}: ${component} must require data`);
    const extra = Object.keys(message.properties).filter((key) => !['event', 'id', 'data'].includes(key));
    if (extra.length > 0) throw new Error(`${name}: ${component} has properties an SSE event cannot carry: ${extra.join(', ')}`);
    if (message.additionalProperties !== false) throw new Error(`${name}: ${component} must close the object`);
    if (event in events) throw new Error(`${name}: the event ${event} is declared twice`);
    events[event] = component;
  }
  const mapping: Json | undefined = union.discriminator?.mapping;
  if (union.discriminator && union.discriminator.propertyName !== 'event') throw new Error(`${name}: the stream's discriminator must be event`);
  if (mapping) {
    const mapped = Object.fromEntries(Object.entries<string>(mapping).map(([event, ref]) => [event, COMPONENT.exec(ref)?.[1]]));
    if (JSON.stringify(Object.entries(mapped).sort()) !== JSON.stringify(Object.entries(events).sort())) {
      throw new Error(`${name}: the stream's discriminator mapping does not match its oneOf`);
    }
  }
  return events;
}
