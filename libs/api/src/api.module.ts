import { Module } from '@nestjs/common';

/**
 * The API lib is types, constants and pure helpers; the module exists so apps can list it among their
 * imports like every other lib and so a future provider (e.g. a CRD installer) has a home.
 */
@Module({})
export class ApiModule {}
