// The generated declarations as data ("shapes", made by `stardust sdk generate`) and the one
// checker that holds every value from the core to them: a value that does not fit is a
// DecodeError naming the field, never a silent cast.
import { DecodeError } from "./errors.js";
/** Check `value` against `shape`; `path` names where it is (`book/dune.rights.holder`). */
export function check(decls, shape, value, path) {
    const problem = mismatch(decls, shape, value, path);
    if (problem)
        throw new DecodeError(problem.path, problem.message);
}
function describe(value) {
    if (value === null)
        return "null";
    if (Array.isArray(value))
        return "an array";
    if (typeof value === "object")
        return "an object";
    return `${typeof value} ${JSON.stringify(value)}`;
}
function mismatch(decls, shape, value, path) {
    const expected = (what) => ({ path, message: `expected ${what}, found ${describe(value)}` });
    switch (shape.kind) {
        case "unknown":
            return undefined;
        case "null":
            return value === null ? undefined : expected("null");
        case "boolean":
            return typeof value === "boolean" ? undefined : expected("a boolean");
        case "integer":
            return typeof value === "number" && Number.isInteger(value) ? undefined : expected("an integer");
        case "number":
            return typeof value === "number" ? undefined : expected("a number");
        case "string":
            return typeof value === "string" ? undefined : expected("a string");
        case "literal":
            return shape.values.some((v) => v === value)
                ? undefined
                : expected(`one of ${shape.values.map((v) => JSON.stringify(v)).join(", ")}`);
        case "ref":
            return typeof value === "string" && value.startsWith(`@${shape.type}/`)
                ? undefined
                : expected(`a reference to a ${shape.type} (@${shape.type}/...)`);
        case "id":
            return typeof value === "string" && value.startsWith(`${shape.type}/`)
                ? undefined
                : expected(`the id of a ${shape.type} (${shape.type}/...)`);
        case "array": {
            if (!Array.isArray(value))
                return expected("an array");
            for (let i = 0; i < value.length; i++) {
                const p = mismatch(decls, shape.items, value[i], `${path}[${i}]`);
                if (p)
                    return p;
            }
            return undefined;
        }
        case "map": {
            if (typeof value !== "object" || value === null || Array.isArray(value))
                return expected("an object");
            for (const [k, v] of Object.entries(value)) {
                const p = mismatch(decls, shape.values, v, `${path}.${k}`);
                if (p)
                    return p;
            }
            return undefined;
        }
        case "named": {
            const decl = decls[shape.name];
            if (!decl)
                return { path, message: `the generated code has no declaration ${shape.name}; generate it again` };
            if (typeof value !== "object" || value === null || Array.isArray(value))
                return expected(`an object (${shape.name})`);
            const record = value;
            const known = new Set();
            for (const field of decl.fields) {
                known.add(field.key);
                if (!(field.key in record)) {
                    if (field.required)
                        return { path: `${path}.${field.key}`, message: "missing, and the schema requires it" };
                    continue;
                }
                const p = mismatch(decls, field.shape, record[field.key], `${path}.${field.key}`);
                if (p)
                    return p;
            }
            for (const [k, v] of Object.entries(record)) {
                if (known.has(k))
                    continue;
                if (decl.extra === null)
                    return { path: `${path}.${k}`, message: `a field ${shape.name} does not have` };
                const p = mismatch(decls, decl.extra, v, `${path}.${k}`);
                if (p)
                    return p;
            }
            return undefined;
        }
        case "union": {
            let first;
            for (const option of shape.of) {
                const p = mismatch(decls, option, value, path);
                if (!p)
                    return undefined;
                first ??= p;
            }
            return first ?? expected("nothing (an empty union)");
        }
    }
}
